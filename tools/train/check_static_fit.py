"""Tests of static_fit.py (numpy, scipy and safetensors: .ci/run runs them in their own
venv, apart from the stdlib-only `test_*.py`): the records it reads are the ones
examples/static_fit_data.rs writes, and the fit finds a table whose row means give the
transformer's vectors back, keeping the distilled rows of tokens no chunk holds."""

import json
import struct
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import static_fit  # noqa: E402


def write_records(path, records, dims):
    with open(path, "wb") as f:
        f.write(b"SFD1" + struct.pack("<I", dims))
        for ids, vector in records:
            f.write(struct.pack("<I", len(ids)))
            f.write(np.asarray(ids, dtype="<u4").tobytes())
            f.write(np.asarray(vector, dtype="<f4").tobytes())


class Fit(unittest.TestCase):
    def test_the_records_read_back_as_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "d.bin"
            write_records(path, [([3, 1, 3], [0.5, -1.0]), ([], [2.0, 0.0])], 2)
            ids, vectors = static_fit.read_records([path])
        self.assertEqual([list(i) for i in ids], [[3, 1, 3], []])
        np.testing.assert_allclose(vectors, [[0.5, -1.0], [2.0, 0.0]])
        a = static_fit.mean_matrix(ids, 5)
        np.testing.assert_allclose(a.toarray()[0], [0, 1 / 3, 0, 2 / 3, 0])

    def test_the_fit_recovers_a_table_and_keeps_unseen_rows(self):
        rng = np.random.default_rng(7)
        vocab, dims, teacher_dims, seen = 400, 8, 8, 300
        truth = rng.normal(size=(vocab, teacher_dims))
        # The distilled table: the truth's rows turned by a fixed map, plus noise.
        turn = np.linalg.qr(rng.normal(size=(teacher_dims, dims)))[0]
        distilled = truth @ turn + 0.3 * rng.normal(size=(vocab, dims))
        records = []
        for _ in range(3000):
            ids = rng.integers(0, seen, size=rng.integers(3, 12))
            records.append((ids, truth[ids].mean(axis=0)))
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            write_records(tmp / "d.bin", records, teacher_dims)
            init = tmp / "init"
            init.mkdir()
            save_file({"embeddings": distilled.astype(np.float32)}, str(init / "model.safetensors"))
            (init / "tokenizer.json").write_text("{}")
            (init / "config.json").write_text(json.dumps({"model_type": "model2vec"}))
            out = tmp / "out"
            sys.argv = ["static_fit.py", str(tmp / "d.bin"), "--init", str(init), "--out", str(out),
                        "--lam", "0.001", "--blend", "1.0", "--iters", "200"]
            static_fit.main()
            table = load_file(str(out / "model.safetensors"))["embeddings"].astype(np.float64)
            config = json.loads((out / "config.json").read_text())
        self.assertEqual(table.shape, (vocab, dims))
        self.assertEqual(config["fitted_to_chunks"], 3000)
        # Row means of new chunks, in the target space, against the truth's.
        _, _, vt = np.linalg.svd(static_fit.normalise(np.vstack([v for _, v in records])), full_matrices=False)
        test = [rng.integers(0, seen, size=6) for _ in range(200)]
        got = static_fit.normalise(np.vstack([table[t].mean(axis=0) for t in test]))
        want = static_fit.normalise(np.vstack([truth[t].mean(axis=0) for t in test]) @ vt[:dims].T)
        fitted_cos = (got * want).sum(axis=1).mean()
        self.assertGreater(fitted_cos, 0.95)
        # Rows no chunk holds are the distilled ones carried into the new space by one
        # linear map: a least-squares map from the distilled rows gives them back.
        unseen = slice(seen, vocab)
        cos = lambda m: static_fit.normalise(m) @ static_fit.normalise(m).T
        np.testing.assert_allclose(cos(table[unseen]), cos(distilled[unseen] @ np.linalg.lstsq(distilled[unseen], table[unseen], rcond=None)[0]), atol=1e-3)



if __name__ == "__main__":
    unittest.main()
