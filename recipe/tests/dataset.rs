//! Generate → freeze → verify → prepare, end to end on the tiny cohort.

use recipe::frozen::{Frozen, Partition};
use recipe::generate::{self, Scale};
use recipe::{cache, features, freeze, frozen, npy, source};
use std::path::Path;

fn cohort(dir: &Path) -> (std::path::PathBuf, generate::Generated) {
    let raw = dir.join("raw");
    let g = generate::generate(&raw, Scale::Tiny, 7, &mut |_, _| {}).unwrap();
    (raw, g)
}

#[test]
fn generation_is_deterministic_and_shaped_like_the_real_data() {
    let tmp = tempfile::tempdir().unwrap();
    let (raw, g) = cohort(tmp.path());
    let again = tmp.path().join("again");
    generate::generate(&again, Scale::Tiny, 7, &mut |_, _| {}).unwrap();
    for f in [generate::SERIES_FILE, generate::EVENTS_FILE] {
        assert_eq!(
            std::fs::read(raw.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f} differs"
        );
    }
    assert_eq!(g.series, 8);
    assert!(g.rows > 8 * 2 * 17_280, "{} rows", g.rows);
    assert!(g.missing_events > 0 && g.missing_events < g.events, "{g:?}");
    let other = tmp.path().join("other");
    generate::generate(&other, Scale::Tiny, 8, &mut |_, _| {}).unwrap();
    assert_ne!(
        std::fs::read(raw.join(generate::EVENTS_FILE)).unwrap(),
        std::fs::read(other.join(generate::EVENTS_FILE)).unwrap()
    );
    // Refuses an existing output, leaving it alone.
    assert!(matches!(
        generate::generate(&other, Scale::Tiny, 8, &mut |_, _| {}),
        Err(generate::GenerateError::Exists(_))
    ));
}

#[test]
fn freeze_then_prepare_every_training_series() {
    let tmp = tempfile::tempdir().unwrap();
    let (raw, g) = cohort(tmp.path());
    let out = tmp.path().join("frozen");
    let frozen = freeze::freeze(
        &raw.join(generate::SERIES_FILE),
        &raw.join(generate::EVENTS_FILE),
        &out,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(frozen.series.len(), 8);
    assert_eq!(frozen.series.iter().map(|s| s.samples).sum::<u64>(), g.rows);
    assert_eq!((frozen.split.train, frozen.split.validation, frozen.split.test), (5, 1, 2));
    let loaded = Frozen::load(&out).unwrap();
    assert_eq!(loaded, frozen);
    frozen::verify_sources(&out, &loaded).unwrap();
    // No partial directory is left beside the output.
    let names: Vec<_> =
        std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Timestamps are stored prefix-delta encoded, not as plain strings.
    for s in &loaded.series {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let reader = SerializedFileReader::new(std::fs::File::open(out.join(&s.file)).unwrap());
        for group in reader.unwrap().metadata().row_groups() {
            let column = group.columns().iter().find(|c| c.column_path().string() == "timestamp");
            let encodings: Vec<_> = column.unwrap().encodings().collect();
            assert!(
                encodings.contains(&parquet::basic::Encoding::DELTA_BYTE_ARRAY),
                "{}: {encodings:?}",
                s.file
            );
        }
    }

    let cache_dir = tmp.path().join("cache");
    let mut frames = 0;
    for s in loaded.train() {
        let p = cache::prepare_series(
            &out,
            &cache::SeriesRef { id: &s.id, file: &s.file, sha256: &s.sha256 },
            &cache_dir,
        )
        .unwrap();
        assert_eq!(p.samples, s.samples);
        assert_eq!(p.frames as usize, recipe::contract::frame_count(s.samples as usize));
        assert!(p.valid_frames <= p.frames);
        frames += p.frames;
        // The cache holds exactly what the scalar reference computes.
        let bytes = std::fs::read(out.join(&s.file)).unwrap();
        let data = source::read_series(bytes.into(), &s.file, &s.id).unwrap();
        let reference = features::extract_reference(&data.local_seconds, &data.enmo, &data.anglez);
        let [values, valid] = cache::files(&s.id);
        let cached = npy::read_f32_2d(&std::fs::read(cache_dir.join(values)).unwrap()).unwrap();
        assert_eq!(cached.dim(), reference.values.dim());
        assert_eq!(
            cached.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            reference.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(
            npy::read_bool_1d(&std::fs::read(cache_dir.join(valid)).unwrap()).unwrap(),
            reference.valid
        );
    }
    assert!(frames > 0);
    assert!(loaded.series.iter().filter(|s| s.partition == Partition::Train).count() == 5);
}
