"""mlc_tune.Database and mlc_tune.PrimFunc: the records of a small tuning
run read back (top, one record with its trace as Python and its
scheduled TVMScript); the workload rebuilt, scheduled by the best trace
to the very function measured (same structural hash, same text),
compiled and checked against the interpreter; TVMScript parsed back;
errors as exceptions."""
import os
import subprocess
import tempfile
import unittest

import mlc_tune
from mlc_tune import MlcError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(os.environ.get("MLC_WORKER", os.path.join(ROOT, "build", "bin", "mlc-worker")))


class DbPrimFuncTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.db_path = os.path.join(cls.tmp.name, "t.db")
        subprocess.run([os.path.join(BIN, "mlc-tune"), "--task", "matmul", "--shape", "16,16,16",
                        "--trials", "8", "--db", cls.db_path, "--cost-model", "random",
                        "--no-baseline", "-j", "1", "--trials-per-round", "4"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_top_and_record(self):
        with mlc_tune.Database(self.db_path) as db:
            top = db.top("matmul", k=3)
            self.assertEqual([r["rank"] for r in top], [1, 2, 3])
            self.assertTrue(top[0]["mean_sec"] <= top[1]["mean_sec"] <= top[2]["mean_sec"])
            self.assertEqual(top[0]["replay"], "ok")
            rec = db.record(top[0]["id"], ir=True)
            self.assertIn("sch.get_block", rec["python"])
            self.assertIn("@T.prim_func", rec["ir"])
            self.assertIsInstance(rec["trace"], dict)
            self.assertEqual(db.top("nosuch"), [])

    def test_schedule_by_best_trace(self):
        with mlc_tune.Database(self.db_path) as db:
            rec = db.record(db.top("matmul", k=1)[0]["id"], ir=True)
        f = mlc_tune.PrimFunc.task("matmul", "16,16,16")
        s = f.apply_trace(rec["trace"])
        self.assertEqual(s.hash, rec["sched_hash"])
        self.assertEqual(s.script(), rec["ir"])
        self.assertGreater(s.check(), 0)
        self.assertNotEqual(f.hash, s.hash)

    def test_tune_a_kernel(self):
        db = os.path.join(self.tmp.name, "k.db")
        f = mlc_tune.PrimFunc.task("softmax", "8,32")
        r = f.tune(trials=6, db=db, task="sm", progress=False)
        self.assertEqual((r.measured, r.errors), (6, 0))
        again = f.tune(trials=6, db=db, task="sm", progress=False)  # the budget is spent
        self.assertEqual(again.measured, 0)
        with mlc_tune.Database(db) as d:
            best = d.top("sm", k=1)[0]
        self.assertEqual(best["id"], r.best_record_id)

    def test_parse_round_trip(self):
        f = mlc_tune.PrimFunc.task("softmax", "8,32")
        g = mlc_tune.PrimFunc.parse(f.script())
        self.assertEqual(g.hash, f.hash)
        self.assertGreater(g.check(), 0)

    def test_errors(self):
        with self.assertRaisesRegex(MlcError, "nonexistent"):
            mlc_tune.Database("/nonexistent/x.db")
        with mlc_tune.Database(self.db_path) as db:
            with self.assertRaises(KeyError):
                db.record(10 ** 9)
        with self.assertRaisesRegex(MlcError, r"\d+:\d+"):
            mlc_tune.PrimFunc.parse("@T.prim_func\ndef main(:\n")
        with self.assertRaisesRegex(MlcError, "unknown task 'nosuch'"):
            mlc_tune.PrimFunc.task("nosuch")
        f = mlc_tune.PrimFunc.task("matmul", "16,16,16")
        with self.assertRaises(MlcError):
            f.apply_trace("{not json")


if __name__ == "__main__":
    unittest.main()
