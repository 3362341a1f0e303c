//! Unit tests of `crate::model::tokenizer_spm`.

use super::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn merges_follow_the_merged_pieces_score() {
    let tokens = s(&["<unk>", "a", "b", "c", "ab", "bc", "abc"]);
    let scores = [0.0, 0.0, 0.0, 0.0, -1.0, -0.5, -2.0];
    let types = [2, 1, 1, 1, 1, 1, 1];
    let m = derive_merges(&tokens, &scores, &types);
    let m: Vec<String> = m.iter().map(|(a, b)| format!("{a} {b}")).collect();
    // bc (-0.5) before ab (-1.0) before the two splits of abc (-2.0), ordered by ids.
    assert_eq!(m, ["b c", "a b", "a bc", "ab c"]);
}

#[test]
fn spaces_become_the_marker_and_unknown_bytes_fall_back() {
    let mut tokens = s(&["<unk>", "<bos>", SPACE, "h", "i", "hi"]);
    let mut types = vec![2, 3, 1, 1, 1, 1];
    let piece = format!("{SPACE}hi");
    tokens.push(piece);
    types.push(1);
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6);
    }
    let scores = vec![0.0; tokens.len()];
    let tok = build_spm(&tokens, &scores, &types, Some(0), false).unwrap();
    let ids = tok.encode("hi hi<bos>é", false).unwrap().get_ids().to_vec();
    // é is two bytes, 0xC3 0xA9, with no piece of its own.
    let c3 = 7 + 0xC3;
    assert_eq!(ids, [5, 6, 1, c3, 7 + 0xA9]);
    assert_eq!(tok.decode(&ids, false).unwrap(), "hi hi<bos>é");
}
