//! `read`: opens a carton with the zip crate and checks everything the
//! original implementation's loader relies on, plus the shape of what the
//! original writes (MANIFEST format; with `--original-layout` also the
//! compression, order and text of each file). The first problem found is
//! returned as the error.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zip::CompressionMethod;

use crate::model::{
    numeric_size, CartonToml, IndexToml, Links, StringsToml, TensorOrMiscReference, MISC_PREFIX,
    TENSOR_PREFIX,
};
use crate::paths::{clean_relative, resolve_link};

pub struct ReadOptions {
    /// A directory of linked files named by sha256 (what `carton shrink
    /// --blobs` writes); without it linked files are counted, not read.
    pub blobs: Option<PathBuf>,
    /// Also require the layout the original writes.
    pub original_layout: bool,
}

struct Entry {
    name: String,
    method: CompressionMethod,
    symlink: bool,
    data: Vec<u8>,
}

/// A carton's entries and MANIFEST, with the LINKS fallback for files that
/// are not in the zip.
struct Carton {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
    manifest: BTreeMap<String, String>,
    links: Option<Links>,
    blobs: Option<PathBuf>,
}

const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;

pub fn read(path: &Path, opts: &ReadOptions) -> Result<String, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("not a zip archive: {e}"))?;
    let mut entries = Vec::new();
    let mut by_name = HashMap::new();
    let mut dirs = 0usize;
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(|e| format!("entry {i}: {e}"))?;
        let name = std::str::from_utf8(f.name_raw())
            .map_err(|_| {
                format!("entry {i}: name is not UTF-8 (the original's zip layer needs UTF-8)")
            })?
            .to_owned();
        check_extra_fields(&name, "central", f.extra_data())?;
        let local_extra = local_extra_field(path, f.header_start())
            .map_err(|e| format!("{name}: local header: {e}"))?;
        check_extra_fields(&name, "local", &local_extra)?;
        if f.is_dir() {
            dirs += 1;
            continue;
        }
        check_entry_name(&name)?;
        let method = f.compression();
        match method {
            CompressionMethod::Stored | CompressionMethod::Deflated | CompressionMethod::Zstd => {}
            other => {
                return Err(format!(
                    "{name}: compression {other:?}; the original reads stored, deflate and zstd"
                ))
            }
        }
        check_dos_time(&name, f.last_modified())?;
        let symlink = f.unix_mode().map_or(false, |m| m & S_IFMT == S_IFLNK);
        let mut data = Vec::with_capacity(f.size() as usize);
        // Reading to the end makes the zip crate check the CRC-32.
        f.read_to_end(&mut data)
            .map_err(|e| format!("{name}: cannot decode: {e}"))?;
        if data.len() as u64 != f.size() {
            return Err(format!(
                "{name}: decoded {} bytes, declared {}",
                data.len(),
                f.size()
            ));
        }
        if by_name.insert(name.clone(), entries.len()).is_some() {
            return Err(format!("{name}: two entries have this name"));
        }
        entries.push(Entry {
            name,
            method,
            symlink,
            data,
        });
    }

    let manifest_entry = by_name
        .get("MANIFEST")
        .map(|&i| &entries[i])
        .ok_or("no MANIFEST (the original's loader stops without it)")?;
    if manifest_entry.method != CompressionMethod::Stored {
        return Err(format!(
            "MANIFEST is compressed ({:?}); the original stores it",
            manifest_entry.method
        ));
    }
    let manifest = parse_manifest(&manifest_entry.data)?;
    let manifest_sha = hex(&Sha256::digest(&manifest_entry.data));

    let links = match by_name.get("LINKS") {
        None => None,
        Some(&i) => {
            Some(toml::from_slice::<Links>(&entries[i].data).map_err(|e| format!("LINKS: {e}"))?)
        }
    };
    let carton = Carton {
        entries,
        by_name,
        manifest,
        links,
        blobs: opts.blobs.clone(),
    };

    let (linked, fetched) = carton.check_manifest()?;
    let config_bytes = carton
        .content("carton.toml")?
        .ok_or("carton.toml is linked and not fetched")?;
    let config: CartonToml =
        toml::from_slice(&config_bytes).map_err(|e| format!("carton.toml: {e}"))?;
    let misc: BTreeSet<&str> = carton
        .manifest
        .keys()
        .filter(|p| p.starts_with("misc/"))
        .map(|p| p.as_str())
        .collect();
    let tensors = carton.check_tensor_data(opts.original_layout)?;
    let refs = check_references(&config, &tensors, &misc)?;
    if opts.original_layout {
        carton.check_original_layout()?;
    }

    let mut methods: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &carton.entries {
        *methods.entry(method_name(e.method)).or_default() += 1;
    }
    let methods: Vec<String> = methods.iter().map(|(k, v)| format!("{k} {v}")).collect();
    Ok(format!(
        "ok: {} entries ({}{}), {} manifest files ({} linked, {} of them read from blobs), \
         {} tensors, {} references, {} misc files\nmanifest sha256: {}\n",
        carton.entries.len(),
        methods.join(", "),
        if dirs > 0 {
            format!(", {dirs} directories")
        } else {
            String::new()
        },
        carton.manifest.len(),
        linked,
        fetched,
        tensors.len(),
        refs,
        misc.len(),
        manifest_sha
    ))
}

fn method_name(m: CompressionMethod) -> &'static str {
    match m {
        CompressionMethod::Stored => "stored",
        CompressionMethod::Deflated => "deflate",
        CompressionMethod::Zstd => "zstd",
        _ => "other",
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Names as the original's zip layer finds them: exact, relative, `/`
/// separated, without `.`/`..` or empty components.
fn check_entry_name(name: &str) -> Result<(), String> {
    if clean_relative(name).as_deref() != Some(name) {
        return Err(format!("entry name {name:?} is not a clean relative path"));
    }
    Ok(())
}

/// The local header's extra field of the entry whose header starts at
/// `offset`.
fn local_extra_field(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut header = [0u8; 30];
    f.read_exact(&mut header)?;
    if header[..4] != [0x50, 0x4b, 0x03, 0x04] {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "bad signature",
        ));
    }
    let name_len = u16::from_le_bytes([header[26], header[27]]) as i64;
    let extra_len = u16::from_le_bytes([header[28], header[29]]) as usize;
    f.seek(SeekFrom::Current(name_len))?;
    let mut extra = vec![0u8; extra_len];
    f.read_exact(&mut extra)?;
    Ok(extra)
}

/// Extra fields as the original's zip layer parses them: a sequence of
/// (id, size, data) records that exactly fills the field.
fn check_extra_fields(name: &str, which: &str, mut extra: &[u8]) -> Result<(), String> {
    while !extra.is_empty() {
        if extra.len() < 4 {
            return Err(format!(
                "{name}: {which} extra field ends inside a record header"
            ));
        }
        let size = u16::from_le_bytes([extra[2], extra[3]]) as usize;
        if extra.len() - 4 < size {
            return Err(format!(
                "{name}: {which} extra field record overruns the field"
            ));
        }
        extra = &extra[4 + size..];
    }
    Ok(())
}

/// The original's zip layer turns each entry's DOS timestamp into a date
/// (and unwraps the result) whenever it is asked for an entry's metadata,
/// which its loader does for MANIFEST and LINKS; an impossible date would
/// panic it.
fn check_dos_time(name: &str, t: zip::DateTime) -> Result<(), String> {
    let leap = t.year() % 4 == 0 && (t.year() % 100 != 0 || t.year() % 400 == 0);
    let days = match t.month() {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    };
    if t.day() < 1 || t.day() > days || t.hour() > 23 || t.minute() > 59 || t.second() > 59 {
        return Err(format!(
            "{name}: DOS timestamp {}-{:02}-{:02} {:02}:{:02}:{:02} is not a valid date",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ));
    }
    Ok(())
}

/// MANIFEST as the original writes it: one `path=sha256\n` line per file,
/// sorted by path (byte order), lowercase hex. The original's loader itself
/// only needs an `=` on every line.
fn parse_manifest(bytes: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "MANIFEST is not UTF-8")?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("MANIFEST: the last line has no newline".into());
    }
    let mut out = BTreeMap::new();
    let mut previous: Option<&str> = None;
    for (n, line) in text.lines().enumerate() {
        let (path, sha) = line
            .rsplit_once('=')
            .ok_or_else(|| format!("MANIFEST line {}: {line:?} is not path=sha256", n + 1))?;
        if sha.len() != 64
            || !sha
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        {
            return Err(format!(
                "MANIFEST line {}: {sha:?} is not 64 lowercase hex digits",
                n + 1
            ));
        }
        if line.contains('\r') {
            return Err(format!("MANIFEST line {}: carriage return", n + 1));
        }
        if path == "MANIFEST" || path == "LINKS" {
            return Err(format!("MANIFEST line {}: lists {path}", n + 1));
        }
        if let Some(p) = previous {
            if p >= path {
                return Err(format!(
                    "MANIFEST line {}: {path:?} is not after {p:?}",
                    n + 1
                ));
            }
        }
        previous = Some(path);
        out.insert(path.to_owned(), sha.to_owned());
    }
    Ok(out)
}

impl Carton {
    fn entry(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// The bytes of a regular entry, following symlink entries (relative to
    /// the link's directory) the way the original's reader does.
    fn resolved(&self, name: &str) -> Result<Option<&Entry>, String> {
        let mut current = name.to_owned();
        for _ in 0..40 {
            let e = match self.entry(&current) {
                Some(e) => e,
                None => return Ok(None),
            };
            if !e.symlink {
                return Ok(Some(e));
            }
            let target = std::str::from_utf8(&e.data)
                .map_err(|_| format!("{current}: symlink target is not UTF-8"))?;
            current = resolve_link(&current, target)
                .ok_or_else(|| format!("{current}: symlink target {target:?} leaves the carton"))?;
        }
        Err(format!("{name}: symlink loop"))
    }

    /// A file's bytes: from the zip, else from the blobs directory when it is
    /// linked (checked against its sha256), else None (linked, not read).
    fn content(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        if let Some(e) = self.resolved(name)? {
            return Ok(Some(e.data.clone()));
        }
        let sha = self
            .manifest
            .get(name)
            .ok_or_else(|| format!("{name}: not in the archive and not in MANIFEST"))?;
        match &self.blobs {
            Some(dir) => {
                let blob = dir.join(sha);
                let data =
                    std::fs::read(&blob).map_err(|e| format!("{name}: {}: {e}", blob.display()))?;
                let got = hex(&Sha256::digest(&data));
                if &got != sha {
                    return Err(format!(
                        "{name}: linked file has sha256 {got}, MANIFEST says {sha}"
                    ));
                }
                Ok(Some(data))
            }
            None => Ok(None),
        }
    }

    /// Every entry listed, every listed file present or linked, every
    /// present file's sha256 (a symlink entry has its target's).
    fn check_manifest(&self) -> Result<(usize, usize), String> {
        for e in &self.entries {
            if e.name != "MANIFEST" && e.name != "LINKS" && !self.manifest.contains_key(&e.name) {
                return Err(format!("{}: in the archive but not in MANIFEST", e.name));
            }
        }
        let (mut linked, mut fetched) = (0, 0);
        for (path, sha) in &self.manifest {
            match self.resolved(path)? {
                Some(e) => {
                    let got = hex(&Sha256::digest(&e.data));
                    if &got != sha {
                        return Err(format!("{path}: sha256 {got}, MANIFEST says {sha}"));
                    }
                }
                None => {
                    if self.entry(path).is_some() {
                        return Err(format!(
                            "{path}: symlink to a file that is not in the archive"
                        ));
                    }
                    let covered = self
                        .links
                        .as_ref()
                        .map_or(false, |l| l.urls.contains_key(sha));
                    if !covered {
                        return Err(format!(
                            "{path}: missing from the archive and LINKS has no urls for {sha}"
                        ));
                    }
                    linked += 1;
                    if self.content(path)?.is_some() {
                        fetched += 1;
                    }
                }
            }
        }
        Ok((linked, fetched))
    }

    /// index.toml and every tensor file it names, as the original's
    /// `load_tensors` reads them. Returns the names a carton.toml reference
    /// can use: nested tensors and the non-nested ones no nested tensor took.
    fn check_tensor_data(&self, original_layout: bool) -> Result<BTreeSet<String>, String> {
        const INDEX: &str = "tensor_data/index.toml";
        if !self.manifest.contains_key(INDEX) {
            return Err(format!("no {INDEX} (the original's loader requires it)"));
        }
        let bytes = match self.content(INDEX)? {
            Some(b) => b,
            None => return Err(format!("{INDEX} is linked and not fetched")),
        };
        let index: IndexToml = toml::from_slice(&bytes).map_err(|e| format!("{INDEX}: {e}"))?;
        if original_layout {
            let expected = toml::to_string_pretty(&index).map_err(|e| e.to_string())?;
            if expected.as_bytes() != bytes.as_slice() {
                return Err(format!(
                    "{INDEX}: not the text the original writes for it:\n{expected}"
                ));
            }
        }

        let mut plain = BTreeSet::new();
        let mut all = BTreeSet::new();
        for t in &index.tensor {
            if !all.insert(t.name.as_str()) {
                return Err(format!("{INDEX}: two tensors are named {:?}", t.name));
            }
            if t.dtype == "nested" {
                if original_layout && !plain.is_empty() {
                    return Err(format!("{INDEX}: the original lists nested tensors first"));
                }
                continue;
            }
            let position = plain.len();
            plain.insert(t.name.as_str());
            let what = format!("{INDEX}: tensor {:?}", t.name);
            let shape = t
                .shape
                .as_ref()
                .ok_or_else(|| format!("{what}: no shape"))?;
            let file = t.file.as_ref().ok_or_else(|| format!("{what}: no file"))?;
            if !t.inner.is_empty() {
                return Err(format!("{what}: inner on a {} tensor", t.dtype));
            }
            let numel = shape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| format!("{what}: shape {shape:?} overflows"))?;
            let path = clean_relative(&format!("tensor_data/{file}"))
                .ok_or_else(|| format!("{what}: file {file:?} leaves tensor_data/"))?;
            let data = match self.content(&path)? {
                Some(d) => d,
                None => continue, // linked, not fetched
            };
            if t.dtype == "string" {
                let text: StringsToml =
                    toml::from_slice(&data).map_err(|e| format!("{path}: {e}"))?;
                if text.data.len() as u64 != numel {
                    return Err(format!(
                        "{path}: {} strings, shape {shape:?} needs {numel}",
                        text.data.len()
                    ));
                }
                if original_layout {
                    check_layout_name(&path, position, "toml", file)?;
                    let expected = toml::to_string_pretty(&text).map_err(|e| e.to_string())?;
                    if expected.as_bytes() != data.as_slice() {
                        return Err(format!("{path}: not the text the original writes for it"));
                    }
                }
            } else {
                let size = numeric_size(&t.dtype).ok_or_else(|| {
                    format!("{what}: dtype {:?} is unknown to the original", t.dtype)
                })?;
                let want = numel.checked_mul(size as u64);
                if want != Some(data.len() as u64) {
                    return Err(format!(
                        "{path}: {} bytes, {} {shape:?} needs {numel} x {size}",
                        data.len(),
                        t.dtype
                    ));
                }
                if original_layout {
                    check_layout_name(&path, position, "bin", file)?;
                }
            }
        }

        let mut taken = BTreeSet::new();
        for t in index.tensor.iter().filter(|t| t.dtype == "nested") {
            if t.shape.is_some() || t.file.is_some() {
                // The original ignores both on a nested tensor and never writes them.
                if original_layout {
                    return Err(format!(
                        "{INDEX}: nested tensor {:?} has shape or file",
                        t.name
                    ));
                }
            }
            for inner in &t.inner {
                if !plain.contains(inner.as_str()) {
                    return Err(format!(
                        "{INDEX}: nested tensor {:?}: inner {inner:?} is not a non-nested tensor",
                        t.name
                    ));
                }
                if !taken.insert(inner.as_str()) {
                    return Err(format!(
                        "{INDEX}: inner tensor {inner:?} is used twice (the original takes it once)"
                    ));
                }
            }
        }
        Ok(all
            .iter()
            .filter(|n| !taken.contains(*n))
            .map(|n| n.to_string())
            .collect())
    }

    /// What the original's writer produces: every file zstd-compressed
    /// (symlinks stored), MANIFEST stored after every file, LINKS stored
    /// and last.
    fn check_original_layout(&self) -> Result<(), String> {
        let manifest_at = self.by_name["MANIFEST"];
        for (i, e) in self.entries.iter().enumerate() {
            match e.name.as_str() {
                "MANIFEST" => {}
                "LINKS" => {
                    if e.method != CompressionMethod::Stored || i != self.entries.len() - 1 {
                        return Err("LINKS: the original stores it last".into());
                    }
                }
                _ => {
                    let want = if e.symlink {
                        CompressionMethod::Stored
                    } else {
                        CompressionMethod::Zstd
                    };
                    if e.method != want {
                        return Err(format!(
                            "{}: {:?}, the original writes {want:?}",
                            e.name, e.method
                        ));
                    }
                    if i > manifest_at {
                        return Err(format!("{}: after MANIFEST", e.name));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The original names the j-th non-nested tensor of its index
/// `tensor_<j>.bin` (numbers) or `tensor_<j>.toml` (strings), and lists the
/// nested tensors first.
fn check_layout_name(path: &str, position: usize, ext: &str, file: &str) -> Result<(), String> {
    let want = format!("tensor_{position}.{ext}");
    if file != want {
        return Err(format!("{path}: the original names this file {want}"));
    }
    Ok(())
}

/// Every `@tensor_data/` reference names a tensor the original's loader
/// hands out (it indexes its map and panics otherwise); every `@misc/`
/// reference names a file of MANIFEST (its loader opens it on use).
fn check_references(
    config: &CartonToml,
    tensors: &BTreeSet<String>,
    misc: &BTreeSet<&str>,
) -> Result<usize, String> {
    let mut count = 0;
    let tensor = |where_: &str, r: &str| -> Result<(), String> {
        let name = &r[TENSOR_PREFIX.len()..];
        if !tensors.contains(name) {
            return Err(format!(
                "carton.toml: {where_}: {r:?} names no tensor of index.toml"
            ));
        }
        Ok(())
    };
    for (i, t) in config.self_test.iter().flatten().enumerate() {
        for r in t
            .inputs
            .values()
            .chain(t.expected_out.iter().flat_map(|m| m.values()))
        {
            tensor(&format!("self_test {i}"), &r.0)?;
            count += 1;
        }
    }
    for (i, e) in config.example.iter().flatten().enumerate() {
        for r in e.inputs.values().chain(e.sample_out.values()) {
            match r {
                TensorOrMiscReference::T(t) => tensor(&format!("example {i}"), &t.0)?,
                TensorOrMiscReference::M(m) => {
                    let path = format!("misc/{}", &m.0[MISC_PREFIX.len()..]);
                    if !misc.contains(path.as_str()) {
                        return Err(format!("carton.toml: example {i}: {:?} names no file", m.0));
                    }
                }
            }
            count += 1;
        }
    }
    Ok(count)
}
