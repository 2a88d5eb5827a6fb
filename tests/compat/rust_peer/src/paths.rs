//! Relative `/`-separated paths inside a carton.

/// `path` with `.` and empty components dropped and `..` applied; None when
/// it is absolute, empty, or climbs out of the root.
pub fn clean_relative(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}

/// The entry a symlink entry `link` pointing at `target` names: `target`
/// is relative to the link's directory.
pub fn resolve_link(link: &str, target: &str) -> Option<String> {
    match link.rsplit_once('/') {
        Some((dir, _)) => clean_relative(&format!("{dir}/{target}")),
        None => clean_relative(target),
    }
}
