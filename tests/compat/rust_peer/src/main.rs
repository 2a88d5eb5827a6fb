//! carton-rust-peer: reads and writes `.carton` files the way the original
//! Rust implementation of carton does, with the crates it uses (zip 0.6,
//! toml 0.5, serde, sha2 0.10, semver 1, target-lexicon 0.12), so the C++
//! implementation can be tested against it in both directions.
//!
//!   carton-rust-peer read FILE.carton [--blobs DIR] [--original-layout]
//!   carton-rust-peer write DIR FILE.carton [--nested-as-intended]
//!                          [--link-prefix URL --link-min-size N --blobs DIR]
//!   carton-rust-peer extract FILE.carton DIR
//!
//! Exit status: 0 success, 1 the carton (or directory) is refused, 2 usage.

mod model;
mod paths;
mod read;
mod write;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: carton-rust-peer read FILE.carton [--blobs DIR] [--original-layout]\n\
                     \x20      carton-rust-peer write DIR FILE.carton [--nested-as-intended]\n\
                     \x20                             [--link-prefix URL --link-min-size N --blobs DIR]\n\
                     \x20      carton-rust-peer extract FILE.carton DIR";

fn main() -> ExitCode {
    // Options that take a value, options that do not, and the rest.
    const VALUED: [&str; 3] = ["--blobs", "--link-prefix", "--link-min-size"];
    let mut args = std::env::args().skip(1);
    let mut positional: Vec<String> = Vec::new();
    let mut flags: Vec<String> = Vec::new();
    let mut values: std::collections::HashMap<String, String> = Default::default();
    while let Some(a) = args.next() {
        if VALUED.contains(&a.as_str()) {
            match args.next() {
                Some(v) => values.insert(a, v),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            };
        } else if a == "--original-layout" || a == "--nested-as-intended" {
            flags.push(a);
        } else if a.starts_with("--") {
            eprintln!("carton-rust-peer: unknown option {a}\n{USAGE}");
            return ExitCode::from(2);
        } else {
            positional.push(a);
        }
    }
    let flag = |name: &str| flags.iter().any(|f| f == name);
    let value = |name: &str| values.get(name).map(PathBuf::from);
    let blobs = value("--blobs");

    let positional: Vec<&String> = positional.iter().collect();
    let (command, result) = match positional.as_slice() {
        [cmd, file] if cmd.as_str() == "read" => {
            let opts = read::ReadOptions {
                blobs,
                original_layout: flag("--original-layout"),
            };
            ("read", read::read(Path::new(file.as_str()), &opts))
        }
        [cmd, dir, out] if cmd.as_str() == "write" => {
            let links = match (value("--link-prefix"), value("--link-min-size"), &blobs) {
                (None, None, _) => None,
                (Some(prefix), Some(min), Some(blobs)) => {
                    match min.to_str().and_then(|m| m.parse().ok()) {
                        Some(min_size) => Some(write::LinkOptions {
                            url_prefix: prefix.to_string_lossy().into_owned(),
                            min_size,
                            blobs: blobs.clone(),
                        }),
                        None => {
                            eprintln!("{USAGE}");
                            return ExitCode::from(2);
                        }
                    }
                }
                _ => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            };
            let opts = write::WriteOptions {
                nested_as_intended: flag("--nested-as-intended"),
                links,
            };
            (
                "write",
                write::write(Path::new(dir.as_str()), Path::new(out.as_str()), &opts),
            )
        }
        [cmd, file, dir] if cmd.as_str() == "extract" => (
            "extract",
            extract(Path::new(file.as_str()), Path::new(dir.as_str())),
        ),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(summary) => {
            print!("{summary}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("carton-rust-peer {command}: {message}");
            ExitCode::from(1)
        }
    }
}

/// Writes every file entry under `dir` (a symlink entry as a copy of its
/// target), so tests can compare bytes without a zstd-capable unzip.
fn extract(file: &Path, dir: &Path) -> Result<String, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut zip = zip::ZipArchive::new(f).map_err(|e| e.to_string())?;
    let mut files = std::collections::BTreeMap::new();
    let mut symlinks = Vec::new();
    for i in 0..zip.len() {
        let mut e = zip.by_index(i).map_err(|e| e.to_string())?;
        if e.is_dir() {
            continue;
        }
        let name = e.name().to_owned();
        if paths::clean_relative(&name).as_deref() != Some(name.as_str()) {
            return Err(format!("entry name {name:?} is not a clean relative path"));
        }
        let mut data = Vec::new();
        e.read_to_end(&mut data)
            .map_err(|err| format!("{name}: {err}"))?;
        if e.unix_mode().map_or(false, |m| m & 0o170000 == 0o120000) {
            symlinks.push((name.clone(), String::from_utf8_lossy(&data).into_owned()));
        }
        files.insert(name, data);
    }
    let targets: std::collections::HashMap<String, String> = symlinks.into_iter().collect();
    for name in targets.keys() {
        let mut current = name.clone();
        for _ in 0..=40 {
            match targets.get(&current) {
                Some(t) => {
                    current = paths::resolve_link(&current, t)
                        .ok_or_else(|| format!("{name}: symlink leaves the carton"))?;
                }
                None => break,
            }
        }
        let data = files
            .get(&current)
            .filter(|_| !targets.contains_key(&current))
            .ok_or_else(|| format!("{name}: symlink to no file"))?
            .clone();
        files.insert(name.clone(), data);
    }
    for (name, data) in &files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(format!("extracted {} files\n", files.len()))
}
