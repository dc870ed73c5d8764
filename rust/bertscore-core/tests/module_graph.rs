//! The crate's layering, checked from its sources: the module graph (which module names
//! `crate::other`) has no cycle, and `unsafe` code and instruction-set dispatch live only in the
//! `simd` module (a leaf: it uses no other module of the crate).
//!
//! A module is a file of `src/` (its path without `.rs`; `simd/...` files all belong to `simd`).
//! Only code counts: comments are skipped, and so are `#[cfg(test)]` modules at the end of a
//! file (tests may use any module).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`None`: the crate root).
fn module_of(src: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src).expect("under src/");
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_owned();
    (name != "lib").then_some(name)
}

/// The code of a file: comments dropped, the trailing `#[cfg(test)]` module cut off.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            // The test module and everything after it (by convention, the end of the file);
            // a `#[cfg(test)]` item that is not a module is skipped alone.
            let next = lines.get(i + 1).map_or("", |l| l.trim_start());
            if next.starts_with("mod ") || next.starts_with("pub(crate) mod ") {
                break;
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

/// Every `crate::NAME` in `code`.
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let name: String = code[at + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && name.chars().next().is_some_and(|c| c.is_lowercase()) {
            out.insert(name);
        }
    }
    out
}

struct Crate {
    /// Module -> the modules it uses.
    graph: BTreeMap<String, BTreeSet<String>>,
    /// Module -> its code.
    code: BTreeMap<String, String>,
}

fn load() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut all_code: BTreeMap<String, String> = BTreeMap::new();
    for path in files {
        let Some(module) = module_of(&src, &path) else {
            continue;
        };
        let text = fs::read_to_string(&path).expect("a readable source file");
        let c = code(&text);
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(uses(&c).into_iter().filter(|m| *m != module));
        all_code.entry(module).or_default().push_str(&c);
    }
    Crate {
        graph,
        code: all_code,
    }
}

/// A cycle of `graph`, if there is one (as the list of its modules).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = stack.iter().position(|s| s == m).unwrap_or(0);
                let mut cycle = stack[from..].to_vec();
                cycle.push(m.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.to_owned(), 1);
        stack.push(m.to_owned());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(c) = visit(m, graph, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let c =
        code("use crate::x::Y; // crate::z\n/// crate::w\n#[cfg(test)]\nmod tests { crate::t }");
    assert_eq!(uses(&c), BTreeSet::from(["x".to_owned()]));
}

#[test]
fn the_module_graph_is_acyclic() {
    let krate = load();
    assert!(krate.graph.len() > 10, "modules found: {:?}", krate.graph);
    if let Some(cycle) = find_cycle(&krate.graph) {
        panic!("module cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn simd_is_a_leaf_and_the_only_unsafe_module() {
    let krate = load();
    let simd = krate.graph.get("simd").expect("a simd module");
    assert!(simd.is_empty(), "simd uses {simd:?}");
    for (module, code) in &krate.code {
        if module == "simd" {
            continue;
        }
        for word in [
            "unsafe",
            "is_x86_feature_detected",
            "target_feature",
            "std::arch",
        ] {
            assert!(!code.contains(word), "{module} holds `{word}`");
        }
    }
    let lib = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("lib.rs");
    assert!(lib.contains("#![deny(unsafe_code)]"));
    assert!(lib.contains("#[allow(unsafe_code)]\nmod simd;"));
    assert_eq!(lib.matches("allow(unsafe_code)").count(), 1);
}
