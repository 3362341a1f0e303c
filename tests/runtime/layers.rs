//! The top-level modules of `src/` form no import cycle: layers point one way (config → model →
//! engine → bench → record → report). The check reads every source file, collects the `crate::X`
//! paths each top-level module uses, and fails naming the cycle when one is found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module a file under `src/` belongs to (`src/a.rs` and `src/a/**` are both `a`).
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn walk(dir: &Path, root: &Path, graph: &mut Graph) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("src entry").path();
        if path.is_dir() {
            walk(&path, root, graph);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under src");
            let Some(module) = top_module(rel) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).expect("source is UTF-8");
            let deps = graph.entry(module.clone()).or_default();
            deps.extend(uses(&text).into_iter().filter(|d| *d != module));
        }
    }
}

/// A cycle as the list of modules on it (first repeated at the end), if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &Graph,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for d in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    walk(&root, &root, &mut graph);
    assert!(graph.len() > 5, "found too few modules: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle between top-level modules: {}",
            cycle.join(" → ")
        );
    }
}

#[test]
fn the_check_finds_a_cycle_when_there_is_one() {
    let g = |edges: &[(&str, &str)]| {
        let mut graph = Graph::new();
        for (a, b) in edges {
            graph
                .entry(a.to_string())
                .or_default()
                .insert(b.to_string());
        }
        graph
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c")])), None);
    let cycle = find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
    assert_eq!(
        uses("use crate::model::kv;\nlet x = crate::engine::run();"),
        BTreeSet::from(["engine".to_string(), "model".to_string()])
    );
}
