use super::*;
use std::io::Write;

/// An items file holding `bytes`, and the directory that keeps it.
fn written(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("items");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn checked(bytes: &[u8]) -> Result<Arc<Source>, ItemsError> {
    let (_dir, path) = written(bytes);
    check(&path).map(Arc::new)
}

/// Every item a cursor reads, as (line from 1, id).
fn read_all(source: &Arc<Source>) -> Vec<(usize, String)> {
    let mut cursor = source.cursor();
    std::iter::from_fn(|| cursor.next_item()).map(|(n, id)| (n + 1, id)).collect()
}

#[test]
fn an_items_file_is_ids_or_ids_with_positive_weights() {
    let (_d, path) = written(b"a\nb\r\nc");
    let plain = Arc::new(check(&path).unwrap());
    assert_eq!((plain.count(), plain.weighted(), plain.largest_first()), (3, false, false));
    assert_eq!(read_all(&plain), [(1, "a".into()), (2, "b".into()), (3, "c".into())]);
    assert_eq!(plain.sha256(), evidence::sha256_hex(b"a\nb\r\nc"));
    assert_eq!(read_all(&plain), read_all(&plain), "each cursor reads from the start");

    let (_d, path) = written(b"a\t2\nb\t10.5\r\nc\t2\n");
    let weighted = Arc::new(check(&path).unwrap());
    assert!(weighted.weighted() && weighted.largest_first());
    let order = read_all(&weighted);
    assert_eq!(order, [(2, "b".into()), (1, "a".into()), (3, "c".into())], "ties in file order");
}

/// Past the most items sorted, weighted items go in file order, and the
/// source says so.
#[test]
fn too_many_weighted_items_are_handed_out_in_file_order() {
    let (_d, path) = written(b"a\t1\nb\t3\nc\t2\n");
    let sorted = Arc::new(check_sorting(&path, 3).unwrap());
    assert_eq!(read_all(&sorted).iter().map(|(n, _)| *n).collect::<Vec<_>>(), [2, 3, 1]);
    let fell_back = Arc::new(check_sorting(&path, 2).unwrap());
    assert!(fell_back.weighted() && !fell_back.largest_first());
    assert_eq!(read_all(&fell_back).iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 3]);
}

#[test]
fn a_bad_items_file_is_refused_naming_the_line_never_the_id() {
    use ItemsError::*;
    for (text, want) in [
        (&b""[..], Empty),
        (b"\n", EmptyId(1)),
        (b"a\nsecret\nsecret\n", Duplicate(3, 2)),
        (b"a\t0\n", BadWeight(1)),
        (b"a\t-1\n", BadWeight(1)),
        (b"a\tNaN\n", BadWeight(1)),
        (b"a\tinf\n", BadWeight(1)),
        (b"a\tx\n", BadWeight(1)),
        (b"a\t1\tb\n", ThirdField(1)),
        (b"a\t1\nb\n", MixedWeights(2, 1)),
        (b"a\n\nb\n", EmptyId(2)),
        (b"\xff\n", NotUtf8),
        (b"secret\tx\nsecret\n", BadWeight(1)),
    ] {
        let e = checked(text).unwrap_err();
        assert_eq!(e, want, "{:?}", String::from_utf8_lossy(text));
        assert!(!e.to_string().contains("secret"), "{e}");
    }
    // The longest id an answer carries, and one byte more.
    let fits = "s".repeat(protocol::items::MAX_ID_JSON - 2);
    assert!(checked(format!("a\n{fits}\n").as_bytes()).is_ok());
    let over = format!("a\n{fits}s\n");
    assert_eq!(
        checked(over.as_bytes()).unwrap_err(),
        IdTooLong(2, protocol::items::MAX_ID_JSON + 1)
    );
    // Escaped as Python writes it: 3 bytes of UTF-8, 6 of JSON.
    let wide = "€".repeat(protocol::items::MAX_ID_JSON / 6);
    assert!(matches!(checked(wide.as_bytes()), Err(IdTooLong(1, _))));
    // A line past what any id and weight need is not read whole.
    let long = format!("a\nb\t{}\n", "1".repeat(lines::MAX_LINE));
    assert_eq!(checked(long.as_bytes()).unwrap_err(), LineTooLong(2));
}

/// A file that never ends, or is too large, is refused before it is read.
#[test]
fn an_items_file_is_a_regular_file_of_bounded_size() {
    let e = check(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e, ItemsError::NotAFile("/dev/zero".into()));
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big");
    let f = File::create(&big).unwrap();
    f.set_len(MAX_ITEMS_BYTES + 1).unwrap();
    assert!(matches!(check(&big), Err(ItemsError::TooLarge(_))));
}

/// The file read as it was checked, or the run is told: rewritten between
/// two reads, replaced, or changed under a cursor part way.
#[test]
fn a_file_changed_after_it_was_checked_is_found() {
    for weights in ["", "\t1"] {
        let text: String = (0..1000).map(|i| format!("item{i}{weights}\n")).collect();
        let (_d, path) = written(text.as_bytes());
        let source = Arc::new(check(&path).unwrap());
        assert_eq!(read_all(&source).len(), 1000);
        assert_eq!(source.unchanged(), Ok(()));

        // Written again in place, the same bytes: the times say so.
        let mut cursor = source.cursor();
        assert!(cursor.next_item().is_some());
        // Past the kernel's coarse clock tick, which file times are read off.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(b"x").unwrap();
        drop(f);
        assert_eq!(source.unchanged(), Err(ItemsError::Changed));
        // A cursor opened now reads nothing, and says so.
        let fresh = Arc::new(clone_of(&source));
        assert!(fresh.cursor().next_item().is_none());
        assert_eq!(fresh.unchanged(), Err(ItemsError::Changed));
    }
    // Bytes other than those hashed, read in file order to the end (what
    // a rewrite within one tick of the clock would leave).
    let (_d, path) = written(b"a\nb\n");
    let source = check(&path).unwrap();
    let other = Arc::new(Source { sha256: evidence::sha256_hex(b"a\nc\n"), ..clone_of(&source) });
    assert_eq!(read_all(&other).len(), 2);
    assert_eq!(other.unchanged(), Err(ItemsError::Changed));
    let same = Arc::new(source);
    assert_eq!(read_all(&same).len(), 2);
    assert_eq!(same.unchanged(), Ok(()));
}

/// A copy of a source's fields (the tests' only way to make a second).
fn clone_of(s: &Source) -> Source {
    Source {
        path: s.path.clone(),
        stamp: s.stamp,
        count: s.count,
        sha256: s.sha256.clone(),
        weighted: s.weighted,
        sorted: s.sorted.clone(),
        changed: Mutex::new(false),
    }
}
