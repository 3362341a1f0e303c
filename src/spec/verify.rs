//! The greedy acceptance rule: given a draft and the target's choice at each of its positions,
//! which tokens the sequence gains. Pure, so it is tested alone.

/// `draft` holds the proposed tokens d₁..d_k; `target[i]` is the target's token after the fed
/// tokens up to position i (`target[0]` follows the sequence's last known token, `target[i]`
/// follows dᵢ), so `target` has `draft.len() + 1` entries. Returns the accepted drafts followed
/// by the target's own next token: at least one token, at most `k + 1`, each one exactly what
/// plain greedy decoding would have produced.
pub fn accept_greedy(draft: &[u32], target: &[u32]) -> Vec<u32> {
    debug_assert_eq!(
        target.len(),
        draft.len() + 1,
        "one target token per fed position; this is a bug"
    );
    let n = draft.iter().zip(target).take_while(|(d, t)| d == t).count();
    let mut out = draft[..n].to_vec();
    out.push(target[n]);
    out
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
