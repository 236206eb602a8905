"""Tests of the miner's filters (run by .ci/run: `python3 -m unittest discover -s tools/train`).

The code side's JSDoc removal is Sextant's own (`src/dev/pairs.rs`) and tested there.
"""

import random
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mine  # noqa: E402


class LicenceFilter(unittest.TestCase):
    def test_permissive_licences_are_kept(self):
        for licence in ["MIT", "ISC", "Apache-2.0", "BSD-3-Clause", "BSD-2-Clause", "0BSD", "mit"]:
            self.assertTrue(mine.licence_ok({"license": licence})[0], licence)

    def test_other_licences_are_refused(self):
        for licence in ["GPL-3.0", "AGPL-3.0-only", "LGPL-2.1", "BlueOak-1.0.0", "UNLICENSED",
                        "SEE LICENSE IN LICENSE.md", "MPL-2.0", ""]:
            self.assertFalse(mine.licence_ok({"license": licence})[0], licence)
        self.assertFalse(mine.licence_ok({})[0], "no licence at all")

    def test_expressions_and_old_forms(self):
        self.assertTrue(mine.licence_ok({"license": "(MIT OR GPL-3.0)"})[0])
        self.assertFalse(mine.licence_ok({"license": "MIT AND GPL-3.0"})[0])
        self.assertTrue(mine.licence_ok({"license": "(MIT AND Apache-2.0)"})[0])
        self.assertTrue(mine.licence_ok({"license": {"type": "MIT"}})[0])
        self.assertTrue(mine.licence_ok({"licenses": [{"type": "BSD"}, {"type": "GPL"}]})[0])
        self.assertFalse(mine.licence_ok({"licenses": [{"type": "GPL-2.0"}]})[0])


class ReservedFilter(unittest.TestCase):
    reserved = ["rxjs", "zod", "@trpc/", "@hono/", "hono", "date-fns"]

    def test_reserved_packages_and_their_prefixes_are_excluded(self):
        for name in ["rxjs", "rxjs-compat", "@rxjs/anything", "zod", "zod-to-json-schema",
                     "@trpc/server", "@hono/node-server", "hono", "date-fns-tz", "RxJS"]:
            self.assertTrue(mine.is_excluded(name, self.reserved), name)

    def test_development_corpora_are_excluded(self):
        for name in ["lodash-es", "lodash", "lodash.merge", "jest", "@jest/core", "mocha", "eslint"]:
            self.assertTrue(mine.is_excluded(name, self.reserved), name)

    def test_other_packages_pass(self):
        for name in ["react", "semver", "@babel/core", "chalk", "ws"]:
            self.assertFalse(mine.is_excluded(name, self.reserved), name)

    def test_the_shared_list_is_read(self):
        names = mine.read_reserved()
        self.assertIn("rxjs", names)
        self.assertFalse(any(n.startswith("#") for n in names))
        npm = mine.npm_reserved()
        self.assertIn("zod", npm)
        self.assertNotIn("requests", npm, "the Python part of the list is not JavaScript")

    def test_select_never_lists_a_reserved_package(self):
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "npm.tsv"
            listing.write_text("name\tversion\tdownloads\tsummary\n"
                               "rxjs\t7.8.2\t900\t\nzod\t4.0.0\t800\t\nsemver\t7.7.0\t700\t\n"
                               "@types/node\t1.0.0\t600\t\nchalk\t5.0.0\t500\t\n")
            out = Path(tmp) / "packages.txt"
            mine.select(listing, 10, out)
            self.assertEqual(out.read_text().split(), ["semver@7.7.0", "chalk@5.0.0"])

    def test_bundled_copies_are_dropped_by_file(self):
        pairs = [
            {"path": "lib/utilsBundle.js", "code": "class ZodString2 { nonempty(m) {} }"},
            {"path": "lib/utilsBundle.js", "code": "function errorUtil() { return 1; }"},
            {"path": "lib/parse.js", "code": "function expression(node) { return node; }"},
            {"path": "vendor/rxjs/map.js", "code": "function map(f) { return f; }"},
        ]
        kept, dropped = mine.drop_vendored(pairs, ["zod", "rxjs", "express"])
        self.assertEqual([p["path"] for p in kept], ["lib/parse.js"])
        self.assertEqual(dropped, 2)


class Provenance(unittest.TestCase):
    def test_recorded_hashes_are_read_past_the_commit_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifest = Path(tmp) / "manifest.tsv"
            self.assertEqual(mine.recorded_hashes(manifest), {})
            manifest.write_text(
                "# chunker: abc123\n"
                "package\tlicence\ttarball_sha256\tfiles_with_pairs\tpairs\tnote\n"
                "semver@7.8.6\tISC\taaa\t1\t18\t\n"
                "odd@1.0.0\tnone\t\t0\t0\tunreadable tarball\n"
            )
            self.assertEqual(mine.recorded_hashes(manifest), {"semver@7.8.6": "aaa"})

    def test_a_tarball_with_other_bytes_is_reported(self):
        rows = [("semver@7.8.6", "ISC", "bbb", 1, 18, ""), ("new@1.0.0", "MIT", "ccc", 1, 2, "")]
        changed = mine.hash_mismatches(rows, {"semver@7.8.6": "aaa"})
        self.assertEqual(len(changed), 1)
        self.assertIn("semver@7.8.6: bbb (manifest.tsv has aaa)", changed[0])
        self.assertEqual(mine.hash_mismatches(rows, {"semver@7.8.6": "bbb"}), [])

    def test_the_committed_manifest_records_hashes(self):
        hashes = mine.recorded_hashes(mine.HERE / "manifest.tsv")
        self.assertGreater(len(hashes), 100)
        self.assertTrue(all(len(h) == 64 for h in hashes.values()))

    def test_the_chunker_commit_is_a_git_commit(self):
        commit = mine.chunker_commit()
        self.assertRegex(commit, r"^[0-9a-f]{40}(\+dirty)?$")


class Deduplication(unittest.TestCase):
    def test_same_code_or_near_identical_description_is_kept_once(self):
        pairs = [
            {"description": "Returns the value.", "code": "x\n---\nfunction a() { return 1; }"},
            {"description": "Something else entirely.", "code": "y\n---\nfunction a(){return 1;}"},
            {"description": "returns the  VALUE", "code": "z\n---\nfunction b() { return 2; }"},
            {"description": "Parses the header.", "code": "w\n---\nfunction c() { return 3; }"},
        ]
        kept = mine.deduplicate(pairs, set(), set())
        self.assertEqual([p["description"] for p in kept], ["Returns the value.", "Parses the header."])

    def test_negatives_come_from_the_same_file_first(self):
        pairs = [
            {"path": "a.js", "code": "A1"}, {"path": "a.js", "code": "A2"}, {"path": "b.js", "code": "B1"},
        ]
        mine.attach_negatives(pairs, random.Random(1))
        self.assertEqual(pairs[0]["negative"], "A2")
        self.assertEqual(pairs[1]["negative"], "A1")
        self.assertIn(pairs[2]["negative"], ["A1", "A2"])


class Registers(unittest.TestCase):
    def pair(self, register, i, code=None):
        return {"register": register, "path": f"f{i}.py", "breadcrumb": f"s{i}",
                "description": f"{register} description number {i}", "code": code or f"{register} code {i}"}

    def test_each_register_has_its_own_cap(self):
        pairs = [self.pair("doc", i) for i in range(500)] + [self.pair("test", i) for i in range(300)]
        pairs += [self.pair("module", i) for i in range(5)]
        kept = mine.cap_by_register(pairs, random.Random(1))
        count = {r: sum(1 for p in kept if p["register"] == r) for r in ("doc", "module", "test")}
        self.assertEqual(count, {"doc": mine.REGISTER_CAPS["doc"], "module": 5, "test": mine.REGISTER_CAPS["test"]})

    def test_module_docs_that_only_say_where_a_file_came_from_are_dropped(self):
        kept = [self.pair("module", 1), self.pair("doc", 2)]
        for text in ["copied from https://github.com/nodejs/node/blob/main/lib/repl.js",
                     "Taken from the http crate.", "moment.js locale configuration locale : Latvian",
                     "Author: Jane Doe <jane@example.com>"]:
            p = self.pair("module", 3)
            p["description"] = text
            self.assertFalse(mine.describes_purpose(p), text)
        doc = self.pair("doc", 4)
        doc["description"] = "See https://example.com for the format."
        self.assertTrue(mine.describes_purpose(doc))
        self.assertEqual(mine.cap_by_register(kept, random.Random(1)), sorted(kept, key=lambda p: p["path"]))

    def test_the_same_code_is_kept_once_per_register(self):
        pairs = [self.pair("doc", 1, code="def f(): pass"), self.pair("test", 2, code="def f(): pass"),
                 self.pair("test", 3, code="def f(): pass")]
        kept = mine.deduplicate(pairs, set(), set())
        self.assertEqual([p["register"] for p in kept], ["doc", "test"])


if __name__ == "__main__":
    unittest.main()
