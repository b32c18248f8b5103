//! The built-in embedder (`"embedder": "builtin"`): all-MiniLM-L6-v2, the sentence-transformers
//! model (Apache-2.0; a 6-layer BERT, 384 dimensions, 22.7 M parameters, 87 MiB of f32
//! weights), run inside the library by candle's BERT on the CPU. It does what the model's
//! reference implementation does: WordPiece tokens of the lower-cased text, at most 256 of
//! them, the last layer's states averaged over the tokens, the mean scaled to length 1.
//!
//! The weights are files, not part of the library: `scripts/model` installs them, the wheel
//! and `scripts/install` ship them, and `model_dir` finds them (below). Nothing is downloaded.

use super::EmbeddingProvider;
use crate::error::{Error, Result, Status};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// The model's name (`EmbeddingProvider::model`).
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
pub const DIMENSIONS: usize = 384;
/// sentence-transformers' `max_seq_length` for this model: longer texts are truncated.
const MAX_TOKENS: usize = 256;
/// Texts run through the model at once (sorted by length first, so that little is padding).
const BATCH: usize = 16;
/// The files of a model folder this module reads.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// The environment variable naming the model folder when the open options do not.
pub const MODEL_DIR_ENV: &str = "MNEM_MODEL_DIR";

pub struct Builtin {
    model: BertModel,
    tokenizer: Tokenizer,
}

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Status::EmbedderFailed, format!("the built-in embedder: {what}: {e}"))
}

/// Where the model is looked for, first match wins: `explicit` (the open option
/// `model_dir`), `$MNEM_MODEL_DIR`, then beside the library or program that holds mnem
/// (`lib_path`): `<dir>/models/all-MiniLM-L6-v2` (the wheel's layout) and
/// `<dir>/../share/mnem/models/all-MiniLM-L6-v2` (`scripts/install PREFIX`'s), then
/// `/usr/local/share/mnem/models/...` and `/usr/share/mnem/models/...`.
pub fn candidate_dirs(explicit: Option<&Path>, lib_path: Option<&Path>) -> Vec<PathBuf> {
    if let Some(dir) = explicit {
        return vec![dir.to_path_buf()];
    }
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let mut out = Vec::new();
    if let Some(dir) = lib_path.and_then(Path::parent) {
        out.push(dir.join("models").join(MODEL_NAME));
        out.push(dir.join("../share/mnem/models").join(MODEL_NAME));
    }
    for root in ["/usr/local/share/mnem/models", "/usr/share/mnem/models"] {
        out.push(Path::new(root).join(MODEL_NAME));
    }
    out
}

/// The first of `candidate_dirs` that holds every model file, or an error naming them all.
pub fn find_model_dir(explicit: Option<&Path>, lib_path: Option<&Path>) -> Result<PathBuf> {
    let dirs = candidate_dirs(explicit, lib_path);
    if let Some(d) = dirs.iter().find(|d| MODEL_FILES.iter().all(|f| d.join(f).is_file())) {
        return Ok(d.clone());
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(Error::new(
        Status::EmbedderFailed,
        format!(
            "the built-in embedder's model ({MODEL_NAME}: {}) was not found in {}; install it with \
             scripts/model, or name its folder with the open option \"model_dir\" or ${MODEL_DIR_ENV}",
            MODEL_FILES.join(", "),
            looked.join(", ")
        ),
    ))
}

impl Builtin {
    /// Load the model from `dir` (a folder with `MODEL_FILES`).
    pub fn load(dir: &Path) -> Result<Builtin> {
        let read =
            |f: &str| std::fs::read(dir.join(f)).map_err(|e| failed(&format!("reading {}", dir.join(f).display()), e));
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(|e| failed("config.json", e))?;
        if config.hidden_size != DIMENSIONS {
            return Err(failed("config.json", format!("hidden_size {} is not {DIMENSIONS}", config.hidden_size)));
        }
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| failed("tokenizer.json", e))?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| failed("tokenizer.json", e))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        // Read, not mapped: mapping a file is unsafe if another process changes it, and the
        // buffer is dropped once the tensors are built from it.
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| failed("model.safetensors", e))?;
        let model = BertModel::load(vb, &config).map_err(|e| failed("model.safetensors", e))?;
        Ok(Builtin { model, tokenizer })
    }

    /// One batch of texts of similar length: unit-length mean-pooled vectors.
    fn run(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(format!("tokenizing: {e}")))?;
        let dev = &Device::Cpu;
        let ids = enc.iter().map(|e| Tensor::new(e.get_ids(), dev)).collect::<candle_core::Result<Vec<_>>>()?;
        let mask =
            enc.iter().map(|e| Tensor::new(e.get_attention_mask(), dev)).collect::<candle_core::Result<Vec<_>>>()?;
        let ids = Tensor::stack(&ids, 0)?;
        let mask = Tensor::stack(&mask, 0)?;
        let states = self.model.forward(&ids, &ids.zeros_like()?, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let mean = states.broadcast_mul(&mask)?.sum(1)?.broadcast_div(&mask.sum(1)?)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        mean.broadcast_div(&norm)?.to_vec2()
    }
}

impl EmbeddingProvider for Builtin {
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_batch(&[text])?.remove(0))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        // Batches of similar lengths: a batch is padded to its longest text.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.run(&batch).map_err(|e| failed("running the model", e))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn dimensions(&self) -> Option<usize> {
        Some(DIMENSIONS)
    }

    fn model(&self) -> Option<&str> {
        Some(MODEL_NAME)
    }
}

/// The model loaded from the folder `find_model_dir` picks (`explicit`, else where it looks
/// beside this library), shared by every store of the process that uses it (each load costs
/// 87 MiB and about a tenth of a second).
pub fn shared(explicit: Option<&Path>) -> Result<Arc<dyn EmbeddingProvider>> {
    static LOADED: Mutex<Vec<(PathBuf, Weak<Builtin>)>> = Mutex::new(Vec::new());
    let dir = find_model_dir(explicit, crate::ffi::sys::library_path().as_deref())?;
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut loaded = LOADED.lock();
    loaded.retain(|(_, w)| w.strong_count() > 0);
    if let Some(b) = loaded.iter().find(|(d, _)| *d == dir).and_then(|(_, w)| w.upgrade()) {
        return Ok(b);
    }
    let b = Arc::new(Builtin::load(&dir)?);
    loaded.push((dir, Arc::downgrade(&b)));
    Ok(b)
}
