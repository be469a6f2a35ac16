"""The tuning database from Python: the best records of workloads and one
record with its trace (as JSON and as Python) and scheduled TVMScript, as
`mlc-db top/show --json` give them."""
import ctypes
import json

from . import _lib


class Database:
    """An existing database: a file, or a postgresql:// URL.

        with mlc_tune.Database("mlc.db") as db:
            best = db.top("matmul", k=3)[0]
            print(db.record(best["id"], ir=True)["ir"])
    """

    def __init__(self, path):
        err = _lib.error_buffer()
        self.path = str(path)
        self._h = _lib.db_open(_lib.enc(self.path), _lib.MLC_DB_EXISTING, err)
        if not self._h:
            _lib.raise_error(err)

    def close(self):
        if getattr(self, "_h", None):
            _lib.db_close(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise _lib.MlcError("database %s is closed" % self.path)
        return self._h

    def top(self, task=None, k=5, shape=None, target=None):
        """The best k successful records of each workload of task (None:
        every workload), as dicts: id, task, shape, target, mean_sec,
        gflops, run_secs, trace_hash, replay ("ok" when the trace still
        replays to what was measured), round, library."""
        opts = _lib.ReportOptions(_lib.enc(task), _lib.enc(shape), _lib.enc(target), None, 0, 0)
        out, shown, err = _lib.MlcStr(), ctypes.c_int(0), _lib.error_buffer()
        ok = _lib.report_top_json(self._handle(), ctypes.byref(opts), int(k), ctypes.byref(out),
                                  ctypes.byref(shown), err)
        text = _lib.take_str(out)
        if not ok:
            _lib.raise_error(err)
        return json.loads(text)

    def record(self, record_id, ir=False):
        """Record record_id as a dict: its trace (parsed JSON) and the same
        as Python ("python"), times, error, provenance; with ir=True its
        scheduled TVMScript ("ir"). KeyError when there is none."""
        out, err = _lib.MlcStr(), _lib.error_buffer()
        found = _lib.report_record(self._handle(), int(record_id), bool(ir), ctypes.byref(out), err)
        text = _lib.take_str(out)
        if found < 0:
            _lib.raise_error(err)
        if found == 0:
            raise KeyError("no record %d in %s" % (record_id, self.path))
        return json.loads(text)
