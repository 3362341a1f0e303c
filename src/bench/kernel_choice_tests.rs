use super::*;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tokfire-choice-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("kernel-choice.json")
}

#[test]
fn a_measured_choice_is_saved_then_read_back_and_a_foreign_or_broken_one_is_measured_again() {
    let path = temp("cycle");
    let (first, src) = load_or_measure(&path, false);
    assert_eq!(src, Source::Measured(path.clone()));
    assert!(first.chosen.available());
    let (again, src) = load_or_measure(&path, false);
    assert_eq!(src, Source::Cached(path.clone()));
    assert_eq!(again, first);

    let mut other = first.clone();
    other.cpu_model = "some other CPU".into();
    std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
    let (c, src) = load_or_measure(&path, false);
    assert_eq!(
        src,
        Source::Measured(path.clone()),
        "another CPU's choice is not used"
    );
    assert_eq!(c.cpu_model, first.cpu_model);

    std::fs::write(&path, "{not json").unwrap();
    assert_eq!(
        load_or_measure(&path, false).1,
        Source::Measured(path.clone())
    );
    assert_eq!(
        load_or_measure(&path, true).1,
        Source::Measured(path.clone())
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_choice_that_cannot_be_saved_still_runs_and_says_why() {
    let dir = temp("blocked");
    // The choice's directory is a file: nothing can be created under it.
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(dir.parent().unwrap().join("file"), "x").unwrap();
    let path = dir
        .parent()
        .unwrap()
        .join("file")
        .join("kernel-choice.json");
    let (c, src) = load_or_measure(&path, false);
    assert!(c.chosen.available());
    assert!(matches!(src, Source::NotSaved(ref why) if why.contains("kernel-choice.json")));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn the_line_names_each_level_and_how_much_slower_it_was() {
    let c = Choice {
        tokfire_kernel_choice: PROBE_VERSION,
        tokfire_version: "0".into(),
        cpu_model: "x".into(),
        measured_utc: "2026-12-06T19:00:00Z".into(),
        widest: Level::Avx512Vnni,
        chosen: Level::Avx512Vnni,
        probes: vec!["a".into()],
        levels: vec![
            LevelTime {
                level: Level::Avx2,
                total_us: 1240.0,
                probes_us: vec![1240.0],
            },
            LevelTime {
                level: Level::Avx512Vnni,
                total_us: 1000.0,
                probes_us: vec![1000.0],
            },
        ],
    };
    assert_eq!(
        c.line(),
        "measured 2026-12-06: avx512-vnni 1000 µs, avx2 1240 µs (1.24×) per probe set"
    );
    let only = Choice {
        levels: vec![],
        chosen: Level::Scalar,
        ..c
    };
    assert_eq!(only.line(), "scalar: the only level this CPU has");
}
