//! The limits of a preparation program's conversation with its worker
//! (docs/item-protocol.md), which the coordinator checks an items file
//! against before anything runs.

/// The longest answer line a worker reads from a preparation program.
pub const MAX_ANSWER: usize = 64 * 1024;

/// What an answer carries besides its id's JSON string: `{"done": ` and
/// `}`, with room for any spacing a program's JSON writer adds.
const ANSWER_OVERHEAD: usize = 64;

/// The longest id an answer can carry: its JSON string, as Python's `json`
/// writes it (non-ASCII as `\uXXXX`), at most this many bytes.
pub const MAX_ID_JSON: usize = MAX_ANSWER - ANSWER_OVERHEAD;

/// The length of `id` as a JSON string with every non-ASCII character
/// escaped (`json.dumps`'s default), quotes included: the longest any
/// program's answer would spell it.
pub fn id_json_len(id: &str) -> usize {
    2 + id
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if c.is_ascii() => 1,
            c if (c as u32) <= 0xFFFF => 6,
            _ => 12,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checked against Python's own: `len(json.dumps(s))`.
    #[test]
    fn an_id_is_measured_as_python_writes_it() {
        assert_eq!(id_json_len("abc"), 5);
        assert_eq!(id_json_len("a\"b\\c"), 9);
        assert_eq!(id_json_len("\n\u{1}"), 10);
        assert_eq!(id_json_len("é"), 8);
        assert_eq!(id_json_len("😀"), 14);
    }
}
