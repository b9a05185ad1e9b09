"""bench/real_side_by_side.py's torch-free pieces: SplitMix64 against the reference stream,
the bucketing plan, the layouts of translation and masked-LM batches, exact masks, and beam
search over a fake model (test/tools/real-side-by-side.test)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import real_side_by_side as r  # noqa: E402

g = r.SplitMix64(0)
print("splitmix", " ".join(f"{g.next():016x}" for _ in range(3)))
print("permutation", r.seeded_permutation(8, 5))
# Pairs: lengths n + 1 per side; the greedy fill bounds both sides; a length over 6 is clipped.
batches, src, tgt = r.plan_batches([3, 2, 9, 2, 3, 4], 10, 6, 1, [2, 5, 2, 2, 3, 9])
print("plan", batches, "clipped", src, tgt)
print("epoch orders", r.epoch_order(len(batches), 1, 0), r.epoch_order(len(batches), 1, 1))
pick = r.EpochBatches(batches, 1)
print("step batches", [pick(k) for k in range(2 * len(batches))])
seqs = [np.array(x) for x in ([10, 11], [12], [13, 14, 15, 16, 17, 18, 19])]
b = r.translation_batch(seqs, seqs, [1, 0, 2], 4)
for k in ("src", "tgt", "labels"):
    print(k, b[k].tolist())
print("tokens", b["tokens"])
ids = list(range(4, 44))
m, lab = r.mask_exact([1] + ids + [2], 50, {0, 1, 2, 3}, r.mix_seed(7, 3))
print("exact mask", m, lab)
rng = np.random.default_rng(0)
x = np.arange(4, 100004)
mm, ll = r.mask_numpy(x, 100010, np.zeros(len(x), bool), rng)
sel = ll != -100
print(f"numpy mask selected {sel.mean():.2f} masked {(mm[sel] == 3).mean():.2f} "
      f"kept {(mm[sel] == x[sel]).mean():.2f}")
mb = r.mlm_batch([np.array([7, 8, 9]), np.array([5])], [1, 0], lambda i, ids: (ids, ids * 0 - 100))
print("mlm", mb["input_ids"].tolist(), mb["labels"].tolist(), mb["tokens"])


# A fake model: input a prefers token 4 + a % 2 for 2 + a steps, then </s>.
def logprobs(active, tokens):
    A, B, t = tokens.shape
    out = np.full((A, B, 6), -5.0)
    for i, a in enumerate(active):
        if t < 2 + a:
            out[i, :, 4 + a % 2], out[i, :, 2] = -0.1, -3.0
        else:
            out[i, :, 2] = -0.05
    return out - np.log(np.exp(out).sum(-1, keepdims=True))


cand = r.numpy_candidates(logprobs, 5, 2, 1)
print("beam", r.beam_search(cand, 3, beam=5, max_new=10))
print("beam at the limit", r.beam_search(cand, 3, beam=5, max_new=2))
print("greedy", r.beam_search(r.numpy_candidates(logprobs, 1, 2, 1), 3, beam=1, max_new=10))
