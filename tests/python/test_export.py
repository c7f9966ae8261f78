"""Repl.export against the real ./dolsot: a session's history written as a
notebook, a script or a report (the binary's --export), the file replaced
whole, and the caller's mistakes."""

import json
import os
import unittest

import support

from dolsot import DolsotError, InvalidSession, Repl


class Export(support.StoreCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        repl = Repl(timeout=2)
        for code in ("x = 41\nprint('made x')", "x + 1", "1/0",
                     "import time\ntime.sleep(30)"):
            repl.run("ex", code)

    def test_notebook(self):
        path = os.path.join(self.tmp, "ex.ipynb")
        self.assertEqual(Repl().export("ex", path), path)
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        self.assertEqual((nb["nbformat"], nb["nbformat_minor"]), (4, 5))
        self.assertEqual(nb["metadata"]["dolsot"]["session"], "ex")
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        self.assertEqual(["".join(c["source"]) for c in code],
                         ["x = 41\nprint('made x')", "x + 1", "1/0",
                          "import time\ntime.sleep(30)"])
        self.assertEqual(code[0]["outputs"][0],
                         {"output_type": "stream", "name": "stdout", "text": ["made x\n"]})
        self.assertEqual(code[1]["outputs"][0]["data"], {"text/plain": ["42"]})
        self.assertEqual(code[2]["outputs"][0]["ename"], "ZeroDivisionError")
        self.assertTrue(code[3]["metadata"]["dolsot"]["rolled_back"])
        self.assertEqual(code[3]["metadata"]["dolsot"]["status"], "timeout")

    def test_script_and_report(self):
        repl = Repl()
        script = repl.export("ex", os.path.join(self.tmp, "ex.py"), format="py")
        with open(script, encoding="utf-8") as f:
            text = f.read()
        compile(text, script, "exec")
        self.assertIn("# %% state 2\nx + 1\n", text)
        self.assertIn("# import time\n# time.sleep(30)\n", text)
        report = repl.export("ex", os.path.join(self.tmp, "ex.md"), format="md")
        with open(report, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("```python\nx + 1\n```\n", text)
        self.assertIn("ZeroDivisionError: division by zero", text)

    def test_the_file_is_replaced_whole_with_the_umask_mode(self):
        path = os.path.join(self.tmp, "whole", "ex.ipynb")
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as f:
            f.write("old")
        mask = os.umask(0o027)
        try:
            Repl().export("ex", path)
        finally:
            os.umask(mask)
        with open(path, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["nbformat"], 4)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o640)
        self.assertEqual(os.listdir(os.path.dirname(path)), ["ex.ipynb"])

    def test_mistakes(self):
        repl = Repl()
        path = os.path.join(self.tmp, "never.ipynb")
        with self.assertRaisesRegex(DolsotError, "session 'nobody' does not exist"):
            repl.export("nobody", path)
        with self.assertRaisesRegex(ValueError, "format must be one of ipynb, py, md"):
            repl.export("ex", path, format="pdf")
        with self.assertRaises(InvalidSession):
            repl.export("../ex", path)
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()
