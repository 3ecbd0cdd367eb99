//! Dataset integrity and cold feature-cache preparation, by way of the recipe.

use super::{StageContext, StageError, figure};
use protocol::{Figure, Stage};
use recipe::cache::{self, SeriesRef};
use recipe::frozen::{self, Frozen};

pub(super) fn run(stage: &Stage, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    match stage {
        Stage::VerifySources { dataset } => {
            let dir = dataset.as_path();
            let frozen = Frozen::load(dir).map_err(|e| StageError::Failed(e.to_string()))?;
            let v = frozen::verify_sources(dir, &frozen)
                .map_err(|e| StageError::Failed(e.to_string()))?;
            Ok(vec![figure("files", v.files as f64), figure("bytes", v.bytes as f64)])
        }
        Stage::PrepareSeries { dataset, id, file, sha256, cache } => {
            let series = SeriesRef { id, file, sha256 };
            let p = cache::prepare_series(dataset.as_path(), &series, &ctx.run_dir.join(cache))
                .map_err(|e| StageError::Failed(e.to_string()))?;
            let mut shas = p.sha256;
            if crate::planted::asks(&format!("cache:{cache}"))
                && crate::planted::first(&ctx.run_dir, cache)
            {
                let values = ctx.run_dir.join(cache).join(&cache::files(id)[0]);
                shas[0] = crate::planted::flip_file(&values)
                    .map_err(|e| StageError::Failed(format!("planting a fault: {e}")))?;
            }
            for (rel, sha) in cache::files(id).iter().zip(shas) {
                ctx.reporter.artifact(&format!("{cache}/{rel}"), sha);
            }
            Ok(vec![
                figure("samples", p.samples as f64),
                figure("frames", p.frames as f64),
                figure("valid_frames", p.valid_frames as f64),
                figure("read_s", p.read_s),
                figure("hash_s", p.hash_s),
                figure("decode_s", p.decode_s),
                figure("extract_s", p.extract_s),
                figure("write_s", p.write_s),
            ])
        }
        other => Err(StageError::Failed(format!("'{other}' is not a preparation stage"))),
    }
}
