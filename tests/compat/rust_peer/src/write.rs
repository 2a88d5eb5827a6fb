//! `write`: packs a model directory the way the original implementation's
//! `save` packs a model it was given.
//!
//! The original does not copy tensor_data/ or carton.toml: it re-creates
//! them from the model's description. Every tensor a self_test or example
//! references is saved under a new name `_tensor_<n>` (counting references
//! in order: self_test inputs, expected_out, then example inputs,
//! sample_out), example references to misc files become copies
//! `misc/_example_misc_file_<m>`, tensor files are named `tensor_<i>.bin` /
//! `.toml`, and carton.toml and index.toml are serialized by toml 0.5
//! (`to_string_pretty`). The original iterates hash maps there, so its
//! order varies from run to run; this writer sorts instead.
//!
//! The zip: first the generated files (carton.toml, misc/, tensor_data/),
//! then model/, each zstd at the zip crate's default level (3) and the
//! current time; symlinks inside model/ become symlink entries; then
//! MANIFEST, stored, and LINKS (when files are linked), stored.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use zip::write::FileOptions;
use zip::CompressionMethod;

use crate::model::{
    numeric_size, CartonToml, Example, IndexToml, Links, MiscFileReference, SelfTest, StringsToml,
    TensorInfo, TensorOrMiscReference, TensorReference, MISC_PREFIX, TENSOR_PREFIX,
};
use crate::read::hex;

pub struct WriteOptions {
    /// Linked files, as a caller of the original's `save` passes them: model
    /// files of at least `min_size` bytes are left out of the zip and get
    /// the url `<prefix>/<sha256>` in LINKS; their bytes go to `blobs`.
    pub links: Option<LinkOptions>,
    /// The original's `save_tensors` panics on a nested tensor (it strips
    /// the `@tensor_data/` prefix from the generated inner names, which do
    /// not have it). Without this flag a nested tensor is refused; with it
    /// it is written as that code means to write it.
    pub nested_as_intended: bool,
}

pub struct LinkOptions {
    pub url_prefix: String,
    pub min_size: u64,
    pub blobs: PathBuf,
}

/// The source directory's index.toml, read leniently: it need not be in the
/// original's layout.
#[derive(Deserialize)]
struct SourceIndex {
    #[serde(default)]
    tensor: Vec<SourceTensorInfo>,
}

#[derive(Deserialize)]
struct SourceTensorInfo {
    name: String,
    dtype: String,
    #[serde(default)]
    shape: Vec<u64>,
    #[serde(default)]
    file: String,
    #[serde(default)]
    inner: Vec<String>,
}

/// A tensor as the original holds it in memory.
#[derive(Clone)]
enum Tensor {
    Numeric {
        dtype: String,
        shape: Vec<u64>,
        bytes: Vec<u8>,
    },
    Strings {
        shape: Vec<u64>,
        data: Vec<String>,
    },
    Nested(Vec<Tensor>),
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_source_tensors(dir: &Path) -> Result<HashMap<String, Tensor>, String> {
    let td = dir.join("tensor_data");
    let index_path = td.join("index.toml");
    if !index_path.exists() {
        return Ok(HashMap::new());
    }
    let index: SourceIndex = toml::from_slice(&read(&index_path)?)
        .map_err(|e| format!("{}: {e}", index_path.display()))?;
    let mut plain = HashMap::new();
    for t in index.tensor.iter().filter(|t| t.dtype != "nested") {
        let bytes = read(&td.join(&t.file))?;
        let tensor = if t.dtype == "string" {
            let s: StringsToml =
                toml::from_slice(&bytes).map_err(|e| format!("{}: {e}", t.file))?;
            Tensor::Strings {
                shape: t.shape.clone(),
                data: s.data,
            }
        } else {
            numeric_size(&t.dtype).ok_or_else(|| format!("{}: dtype {}", t.name, t.dtype))?;
            Tensor::Numeric {
                dtype: t.dtype.clone(),
                shape: t.shape.clone(),
                bytes,
            }
        };
        plain.insert(t.name.clone(), tensor);
    }
    let mut all = plain.clone();
    for t in index.tensor.iter().filter(|t| t.dtype == "nested") {
        let inner = t
            .inner
            .iter()
            .map(|n| {
                plain
                    .get(n)
                    .cloned()
                    .ok_or_else(|| format!("{}: inner {n}", t.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        all.insert(t.name.clone(), Tensor::Nested(inner));
    }
    Ok(all)
}

/// Files under `root` (following symlinks to directories), sorted, as
/// paths relative to `root`.
fn walk(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    if !root.exists() {
        return Ok(out);
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(root.join(&rel))
            .map_err(|e| format!("{}: {e}", root.join(&rel).display()))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        names.sort();
        for name in names.into_iter().rev() {
            let child = rel.join(name);
            if root.join(&child).is_dir() {
                stack.push(child);
            } else {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn rel_str(p: &Path) -> Result<String, String> {
    p.to_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: not UTF-8", p.display()))
}

struct Saver<'a> {
    dir: &'a Path,
    source: HashMap<String, Tensor>,
    to_save: BTreeMap<String, Tensor>,
    counter: usize,
    misc: BTreeMap<String, Vec<u8>>,
    misc_counter: usize,
}

impl Saver<'_> {
    fn tensor(&mut self, r: &TensorReference) -> Result<TensorReference, String> {
        let name = &r.0[TENSOR_PREFIX.len()..];
        let t = self
            .source
            .get(name)
            .ok_or_else(|| format!("carton.toml: {} is not in index.toml", r.0))?;
        let key = format!("{TENSOR_PREFIX}_tensor_{}", self.counter);
        self.counter += 1;
        self.to_save.insert(key.clone(), t.clone());
        Ok(TensorReference(key))
    }

    fn misc_file(&mut self, r: &MiscFileReference) -> Result<MiscFileReference, String> {
        let bytes = read(&self.dir.join("misc").join(&r.0[MISC_PREFIX.len()..]))?;
        let name = format!("_example_misc_file_{}", self.misc_counter);
        self.misc_counter += 1;
        self.misc.insert(name.clone(), bytes);
        Ok(MiscFileReference(format!("{MISC_PREFIX}{name}")))
    }

    fn either(&mut self, r: &TensorOrMiscReference) -> Result<TensorOrMiscReference, String> {
        Ok(match r {
            TensorOrMiscReference::T(t) => TensorOrMiscReference::T(self.tensor(t)?),
            TensorOrMiscReference::M(m) => TensorOrMiscReference::M(self.misc_file(m)?),
        })
    }
}

fn sorted<V>(m: &HashMap<String, V>) -> Vec<(&String, &V)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// tensor_data/ as the original's `save_tensors` lays it out.
fn save_tensors(
    to_save: BTreeMap<String, Tensor>,
    opts: &WriteOptions,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let mut index = IndexToml::default();
    let mut unnested: BTreeMap<String, Tensor> = BTreeMap::new();
    for (key, t) in &to_save {
        match t {
            Tensor::Nested(items) => {
                if !opts.nested_as_intended {
                    return Err(format!(
                        "{key} is a nested tensor: the original's save_tensors panics on those \
                         (--nested-as-intended writes what it means to write)"
                    ));
                }
                let mut entry = TensorInfo {
                    name: key[TENSOR_PREFIX.len()..].to_owned(),
                    dtype: "nested".into(),
                    ..Default::default()
                };
                for (i, item) in items.iter().enumerate() {
                    let inner = format!("_carton_nested_inner_{key}_{i}");
                    entry.inner.push(inner.clone());
                    unnested.insert(inner, item.clone());
                }
                index.tensor.push(entry);
            }
            _ => {
                unnested.insert(key.clone(), t.clone());
            }
        }
    }
    for (i, (key, t)) in unnested.iter().enumerate() {
        let name = key.strip_prefix(TENSOR_PREFIX).unwrap_or(key).to_owned();
        let (dtype, shape, file, bytes) = match t {
            Tensor::Strings { shape, data } => {
                let text = toml::to_string_pretty(&StringsToml { data: data.clone() })
                    .map_err(|e| e.to_string())?;
                (
                    "string".to_owned(),
                    shape.clone(),
                    format!("tensor_{i}.toml"),
                    text.into_bytes(),
                )
            }
            Tensor::Numeric {
                dtype,
                shape,
                bytes,
            } => (
                dtype.clone(),
                shape.clone(),
                format!("tensor_{i}.bin"),
                bytes.clone(),
            ),
            Tensor::Nested(_) => {
                return Err(format!("{key}: a nested tensor inside a nested tensor"))
            }
        };
        index.tensor.push(TensorInfo {
            name,
            dtype,
            shape: Some(shape),
            file: Some(file.clone()),
            inner: Vec::new(),
        });
        files.insert(format!("tensor_data/{file}"), bytes);
    }
    let text = toml::to_string_pretty(&index).map_err(|e| e.to_string())?;
    files.insert("tensor_data/index.toml".into(), text.into_bytes());
    Ok(())
}

pub fn write(dir: &Path, out: &Path, opts: &WriteOptions) -> Result<String, String> {
    let config_path = dir.join("carton.toml");
    let mut config: CartonToml = toml::from_slice(&read(&config_path)?)
        .map_err(|e| format!("{}: {e}", config_path.display()))?;

    let mut saver = Saver {
        dir,
        source: load_source_tensors(dir)?,
        to_save: BTreeMap::new(),
        counter: 0,
        misc: BTreeMap::new(),
        misc_counter: 0,
    };
    // The model's own misc files keep their names.
    for rel in walk(&dir.join("misc"))? {
        saver
            .misc
            .insert(rel_str(&rel)?, read(&dir.join("misc").join(&rel))?);
    }

    if let Some(tests) = config.self_test.take() {
        let mut out = Vec::new();
        for t in &tests {
            let mut inputs = HashMap::new();
            for (k, r) in sorted(&t.inputs) {
                inputs.insert(k.clone(), saver.tensor(r)?);
            }
            let expected_out = match &t.expected_out {
                None => None,
                Some(m) => {
                    let mut o = HashMap::new();
                    for (k, r) in sorted(m) {
                        o.insert(k.clone(), saver.tensor(r)?);
                    }
                    Some(o)
                }
            };
            out.push(SelfTest {
                name: t.name.clone(),
                description: t.description.clone(),
                inputs,
                expected_out,
            });
        }
        config.self_test = Some(out);
    }
    if let Some(examples) = config.example.take() {
        let mut out = Vec::new();
        for e in &examples {
            let mut inputs = HashMap::new();
            for (k, r) in sorted(&e.inputs) {
                inputs.insert(k.clone(), saver.either(r)?);
            }
            let mut sample_out = HashMap::new();
            for (k, r) in sorted(&e.sample_out) {
                sample_out.insert(k.clone(), saver.either(r)?);
            }
            out.push(Example {
                name: e.name.clone(),
                description: e.description.clone(),
                inputs,
                sample_out,
            });
        }
        config.example = Some(out);
    }
    config.spec_version = 1;

    // The generated files, in path order.
    let mut generated: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    save_tensors(std::mem::take(&mut saver.to_save), opts, &mut generated)?;
    for (name, bytes) in std::mem::take(&mut saver.misc) {
        generated.insert(format!("misc/{name}"), bytes);
    }
    let config_text = toml::to_string_pretty(&config).map_err(|e| format!("carton.toml: {e}"))?;
    generated.insert("carton.toml".into(), config_text.into_bytes());

    let file = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let zerr = |e: zip::result::ZipError| e.to_string();
    let ioerr = |e: std::io::Error| e.to_string();
    let mut manifest: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut links: HashMap<String, String> = HashMap::new();
    let mut count = 0usize;
    let mut linked = Links {
        version: 1,
        urls: HashMap::new(),
    };

    for (name, bytes) in &generated {
        manifest.insert(name.clone(), Some(hex(&Sha256::digest(bytes))));
        zip.start_file(
            name.as_str(),
            FileOptions::default().compression_method(CompressionMethod::Zstd),
        )
        .map_err(zerr)?;
        zip.write_all(bytes).map_err(ioerr)?;
        count += 1;
    }

    let model = dir.join("model");
    let model_real = model
        .canonicalize()
        .map_err(|e| format!("{}: {e}", model.display()))?;
    for rel in walk(&model)? {
        let name = format!("model/{}", rel_str(&rel)?);
        let path = model.join(&rel);
        let link_target = symlink_inside(&path, &model_real)?;
        if let Some(target) = link_target {
            manifest.insert(name.clone(), None);
            links.insert(name.clone(), target.clone());
            zip.add_symlink(name.as_str(), target.as_str(), FileOptions::default())
                .map_err(zerr)?;
        } else {
            let bytes = read(&path)?;
            let sha = hex(&Sha256::digest(&bytes));
            manifest.insert(name.clone(), Some(sha.clone()));
            // Only files under model/ can be linked (the original checks
            // LINKS in that loop alone).
            if let Some(l) = &opts.links {
                if bytes.len() as u64 >= l.min_size {
                    std::fs::create_dir_all(&l.blobs).map_err(ioerr)?;
                    std::fs::write(l.blobs.join(&sha), &bytes).map_err(ioerr)?;
                    let url = format!("{}/{sha}", l.url_prefix.trim_end_matches('/'));
                    linked.urls.entry(sha.clone()).or_insert_with(|| vec![url]);
                    continue;
                }
            }
            let large = bytes.len() as u64 >= 4 * 1024 * 1024 * 1024;
            zip.start_file(
                name.as_str(),
                FileOptions::default()
                    .compression_method(CompressionMethod::Zstd)
                    .large_file(large),
            )
            .map_err(zerr)?;
            zip.write_all(&bytes).map_err(ioerr)?;
        }
        count += 1;
    }

    // A symlink's MANIFEST line carries its final target's sha256.
    let mut text = String::new();
    for (name, sha) in &manifest {
        let sha = match sha {
            Some(s) => s.clone(),
            None => {
                let mut current = name.clone();
                let mut seen = 0;
                loop {
                    let next = crate::paths::resolve_link(&current, &links[&current])
                        .ok_or_else(|| format!("{current}: bad symlink"))?;
                    match manifest.get(&next) {
                        Some(Some(s)) => break s.clone(),
                        Some(None) if seen < 40 => {
                            current = next;
                            seen += 1;
                        }
                        _ => return Err(format!("{name}: symlink to nothing packed")),
                    }
                }
            }
        };
        text.push_str(&format!("{name}={sha}\n"));
    }
    zip.start_file(
        "MANIFEST",
        FileOptions::default().compression_method(CompressionMethod::Stored),
    )
    .map_err(zerr)?;
    zip.write_all(text.as_bytes()).map_err(ioerr)?;
    // LINKS after MANIFEST, stored, serialized without `pretty`.
    if opts.links.is_some() {
        let bytes = toml::to_vec(&linked).map_err(|e| format!("LINKS: {e}"))?;
        zip.start_file(
            "LINKS",
            FileOptions::default().compression_method(CompressionMethod::Stored),
        )
        .map_err(zerr)?;
        zip.write_all(&bytes).map_err(ioerr)?;
    }
    zip.finish().map_err(zerr)?;
    Ok(format!(
        "wrote {} entries and MANIFEST\nmanifest sha256: {}\n",
        count,
        hex(&Sha256::digest(text.as_bytes()))
    ))
}

/// For a symlink whose final target is a file inside the model directory,
/// the relative target the original stores; None for anything else (a
/// symlink leaving the directory is packed as the file it points to).
fn symlink_inside(path: &Path, model_real: &Path) -> Result<Option<String>, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.file_type().is_symlink() {
        return Ok(None);
    }
    let target = std::fs::read_link(path).map_err(|e| e.to_string())?;
    let parent = path.parent().unwrap_or(Path::new("."));
    let parent_real = parent.canonicalize().map_err(|e| e.to_string())?;
    let absolute = lexical_clean(&parent_real.join(&target));
    if !absolute.starts_with(model_real) {
        return Ok(None);
    }
    let from: Vec<_> = parent_real.components().collect();
    let to: Vec<_> = absolute.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..from.len() {
        rel.push("..");
    }
    for c in &to[common..] {
        rel.push(c.as_os_str());
    }
    rel_str(&rel).map(Some)
}

fn lexical_clean(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
