"""The python tool of integrations/pi, through the real pi (tools/node's,
pinned) driven by the scripted model (issue 42, "What must hold")."""
import base64
import errno
import json
import os
import re
import subprocess

import support
from support import BIN, ROOT, PiCase, Rpc


def session_of(end):
    return end["result"]["details"]["session"]


def update_text(event):
    return "\n".join(c["text"] for c in event["partialResult"]["content"] if c["type"] == "text")


def is_update(event, having=""):
    return event.get("type") == "tool_execution_update" and having in update_text(event)


STATUS = r"running in session pi-[0-9a-f-]+: \d+\.\d s"


class State(PiCase):
    def test_state_carries_across_calls(self):
        first, second = self.python("x = 41", "print('hi'); x + 1")
        self.assertFalse(first["isError"])
        self.assertEqual(self.text(second).splitlines()[:2], ["hi", "Out[2]: 42"])
        self.assertIn("now holds: x", self.last_tool_text())
        # and across pi runs of other conversations, by name
        (end,) = self.python("x * 2", session=session_of(second))
        self.assertIn("Out[3]: 82", self.text(end))

    def test_default_session_is_one_per_pi_session_and_again_on_resume(self):
        self.model.replay({"tool": "python", "arguments": {"code": "n = 7"}})
        events = self.pi("first")
        pi_session = next(e for e in events if e.get("type") == "session")["id"]
        (end,) = self.tool_ends(events)
        self.assertEqual(session_of(end), f"pi-{pi_session}")
        # A new pi session: a new dolsot session, without n.
        (other,) = self.python("n")
        self.assertNotEqual(session_of(other), session_of(end))
        self.assertTrue(other["isError"])
        self.assertIn("NameError", self.text(other))
        # The first one resumed: its dolsot session again, with n.
        (again,) = self.python("n + 1", extra=("--session", pi_session))
        self.assertEqual(session_of(again), session_of(end))
        self.assertIn("Out[2]: 8", self.text(again))


class Errors(PiCase):
    def test_error_has_its_traceback_and_the_session_stays(self):
        _, failed, after = self.python("y = 5", "def f():\n    return 1 / 0\nf()", "y")
        self.assertTrue(failed["isError"])
        told = self.model.tool_results(self.model.requests[2])[-1][1]
        for part in ("Traceback (most recent call last)", "line 2, in f", "ZeroDivisionError"):
            self.assertIn(part, told)
        self.assertIn("now holds: f, y", told)
        self.assertFalse(after["isError"])
        self.assertIn("Out[3]: 5", self.text(after))

    def test_timeout_kills_and_rolls_back(self):
        _, timed_out, after = self.python("z = 1", "z = 2\nimport time\ntime.sleep(60)", "z",
                                          timeout=1)
        self.assertTrue(timed_out["isError"])
        self.assertEqual(timed_out["result"]["details"]["status"], "timeout")
        text = self.text(timed_out)
        self.assertIn("TimeoutError", text)
        self.assertIn("rolled back", text)
        self.assertIn("Out[2]: 1", self.text(after))


class Abort(PiCase):
    def test_abort_stops_the_cell_and_the_session_is_unchanged(self):
        session = "abort-me"
        self.python("w = 1", session=session)
        rpc = Rpc(self)
        self.model.replay({"tool": "python", "arguments": {
            "session": session,
            "code": "w = 2\nprint('before the abort')\nimport time\ntime.sleep(120)"}})
        rpc.send({"type": "prompt", "message": "go"})
        rpc.wait(lambda e: is_update(e, "before the abort"))
        rpc.send({"type": "abort"})
        end = rpc.wait(lambda e: e.get("type") == "tool_execution_end")
        self.assertTrue(end["isError"])
        text = self.text(end)
        # The output so far, then what became of the cell.
        self.assertTrue(text.startswith("before the abort\nAborted: "), text)
        self.assertIn("rolled back", text)
        self.assertIn("session unchanged", text)
        rpc.wait(lambda e: e.get("type") == "agent_end")
        rpc.close()
        (after,) = self.python("w", session=session)
        self.assertIn("Out[2]: 1", self.text(after))

    def test_python_command_lists_and_resets(self):
        (end,) = self.python("v = 1")
        session = session_of(end)
        pi_session = session[len("pi-"):]
        rpc = Rpc(self, "--session", pi_session)
        rpc.send({"type": "prompt", "message": "/python"})
        listed = rpc.wait(lambda e: e.get("method") == "notify")
        self.assertIn("(namespace pi)", listed["message"])
        self.assertIn(f"{session}: ", listed["message"])
        self.assertIn("bytes, last used", listed["message"])
        n = len(rpc.events)
        rpc.send({"type": "prompt", "message": "/python reset"})
        reset = rpc.wait(lambda e: e.get("method") == "notify", start=n)
        self.assertEqual(reset["message"], f"reset {session}: 1 removed")
        rpc.close()
        self.assertNotIn(session, self.listed("pi"))


class Live(PiCase):
    """Updates while a cell runs, from dolsot's --json-stream: the cell
    waits on FIFOs that the test opens only once pi has shown what it
    waits for."""

    def gate(self, name):
        """A FIFO a cell's open() waits on until release(path)."""
        path = self.path(name)
        os.mkfifo(path)
        return path

    @staticmethod
    def release(path):
        """Let a cell waiting on path go on; nothing when none waits."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return
            raise
        os.close(fd)

    def start(self, code):
        rpc = Rpc(self)
        self.model.replay({"tool": "python", "arguments": {"code": code, "timeout": 120}})
        rpc.send({"type": "prompt", "message": "go"})
        return rpc

    def test_updates_show_the_elapsed_time_then_the_output_so_far(self):
        quiet, printed = self.gate("quiet"), self.gate("printed")
        rpc = self.start(f"open({quiet!r}).read()\nprint('first line', flush=True)\n"
                         f"open({printed!r}).read()\nprint('second line')")
        # Run before rpc.close: a cell still waiting would outlive pi.
        self.addCleanup(self.release, quiet)
        self.addCleanup(self.release, printed)
        update = rpc.wait(is_update)
        self.assertRegex(update_text(update), f"^{STATUS}$")
        self.release(quiet)
        update = rpc.wait(lambda e: is_update(e, "first line"))
        self.assertRegex(update_text(update), f"^first line\n{STATUS}$")
        self.assertEqual(update["partialResult"]["details"]["namespace"], "pi")
        self.release(printed)
        end = rpc.wait(lambda e: e.get("type") == "tool_execution_end")
        self.assertFalse(end["isError"])
        self.assertEqual(self.text(end).splitlines()[:2], ["first line", "second line"])
        rpc.wait(lambda e: e.get("type") == "agent_end")

    def test_a_long_output_so_far_keeps_its_head_and_tail_within_pi_limits(self):
        printed = self.gate("printed")
        rpc = self.start("for i in range(300000):\n    print(f'line {i}')\n"
                         f"print('printed', flush=True)\nopen({printed!r}).read()")
        self.addCleanup(self.release, printed)
        update = rpc.wait(lambda e: is_update(e, "\nprinted\n"))
        lines = update_text(update).splitlines()
        self.assertRegex(lines[-1], f"^{STATUS}$")
        self.assertEqual(lines[-3:-1], ["line 299999", "printed"])
        self.assertTrue(any(re.fullmatch(r"\[\.\.\. \d+ (or more )?lines, .* cut here so far; .*\]", w)
                            for w in lines), "no line says what was cut")
        for e in rpc.events:
            if is_update(e):
                self.assertLessEqual(len(update_text(e).encode()), 50 * 1024)
                self.assertLessEqual(len(update_text(e).splitlines()), 2000)
        self.release(printed)
        end = rpc.wait(lambda e: e.get("type") == "tool_execution_end")
        self.assertFalse(end["isError"])
        self.assertEqual(self.text(end).splitlines()[0], "line 0")
        rpc.wait(lambda e: e.get("type") == "agent_end")


class Namespaces(PiCase):
    """pi's sessions are in a namespace of their own, `pi` unless the
    settings (or DOLSOT_NAMESPACE) name another."""

    def two_cells(self, *calls):
        """One pi run calling python with each of calls' arguments; its ends."""
        for args in calls:
            self.model.replay({"tool": "python", "arguments": args})
        ends = self.tool_ends(self.pi("go"))
        self.assertEqual(len(ends), len(calls))
        return ends

    def test_pi_and_the_command_line_do_not_see_each_others_sessions(self):
        self.dolsot("--session", "shared", code="x = 1")
        mine, shared = self.two_cells({"code": "y = 2"}, {"code": "x", "session": "shared"})
        self.assertEqual(mine["result"]["details"]["namespace"], "pi")
        # The command line's `shared` is not the one pi's model named.
        self.assertTrue(shared["isError"])
        self.assertIn("NameError", self.text(shared))
        self.assertEqual(self.listed("pi"), {session_of(mine), "shared"})
        self.assertEqual(self.listed("default"), {"shared"})
        # /python reset all empties pi's namespace and nothing else.
        rpc = Rpc(self, "--session", session_of(mine)[len("pi-"):])
        rpc.send({"type": "prompt", "message": "/python reset all"})
        reset = rpc.wait(lambda e: e.get("method") == "notify")
        self.assertEqual(reset["message"], "reset all of namespace pi: 2 removed")
        rpc.close()
        self.assertEqual(self.listed("pi"), set())
        self.assertEqual(self.dolsot("--session", "shared", code="x"), "1\n")

    def test_the_namespace_from_settings_or_the_environment(self):
        self.settings({"binary": BIN, "namespace": "team"})
        (end,) = self.python("t = 1")
        self.assertEqual(end["result"]["details"]["namespace"], "team")
        self.assertEqual(self.listed("team"), {session_of(end)})
        self.assertEqual(self.listed("pi"), set())
        # `default` shares the command line's sessions.
        self.dolsot("--session", "shared", code="x = 5")
        self.settings({"binary": BIN, "namespace": "default"})
        (end,) = self.python("x", session="shared")
        self.assertIn("Out[2]: 5", self.text(end))
        # No setting: DOLSOT_NAMESPACE in pi's environment, as dolsot reads it.
        self.settings({"binary": BIN})
        self.extra_env = {"DOLSOT_NAMESPACE": "fromenv"}
        (end,) = self.python("u = 1")
        self.assertEqual(self.listed("fromenv"), {session_of(end)})
        self.assertEqual(self.listed("pi"), set())


class Output(PiCase):
    def test_a_long_output_keeps_head_and_tail_within_pi_limits(self):
        (end,) = self.python("for i in range(300000):\n    print(f'line {i}')")
        told = self.last_tool_text()
        self.assertLessEqual(len(told.encode()), 50 * 1024)
        self.assertLessEqual(len(told.splitlines()), 2000)
        lines = told.splitlines()
        self.assertEqual(lines[0], "line 0")
        self.assertIn("line 299999", lines)
        cut = re.search(r"\[\.\.\. (\d+) of 300000 lines \(.*\) cut here", told)
        self.assertTrue(cut, "no line says what was cut")
        self.assertGreater(int(cut.group(1)), 290000)
        path = end["result"]["details"]["fullOutputPath"]
        self.assertIn(path, told)
        self.assertTrue(path.startswith(self.tmp))
        with open(path, encoding="utf-8") as f:
            whole = f.read().splitlines()
        self.assertEqual(whole[:2], ["line 0", "line 1"])
        self.assertIn("line 299999", whole)
        self.assertEqual(sum(1 for w in whole if w.startswith("line ")), 300000)

    def test_one_long_line_keeps_its_start_and_its_end(self):
        (end,) = self.python("print('<' + 'x' * 300000 + '>')")
        told = self.last_tool_text()
        self.assertLessEqual(len(told.encode()), 50 * 1024)
        self.assertTrue(told.startswith("<xxx"))
        self.assertIn("xxx>\n", told)
        self.assertIn("the middle of its one line", told)
        self.assertIn(end["result"]["details"]["fullOutputPath"], told)

    def test_a_figure_reaches_the_model_as_an_image_on_success_and_on_error(self):
        plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n"
        ok, failed = self.python(plot, plot + "raise ValueError('after the plot')")
        self.assertFalse(ok["isError"])
        self.assertTrue(failed["isError"])
        # Request n (after the n-th result) carries the images of every result so far.
        for n, end in ((1, ok), (2, failed)):
            images = [c for c in end["result"]["content"] if c["type"] == "image"]
            self.assertEqual(len(images), 1)
            self.assertEqual(base64.b64decode(images[0]["data"])[:8], b"\x89PNG\r\n\x1a\n")
            urls = self.model.images(self.model.requests[n])
            self.assertEqual(len(urls), n)
            self.assertEqual(urls[-1], "data:image/png;base64," + images[0]["data"])
        self.assertIn("ValueError: after the plot", self.text(failed))


class Settings(PiCase):
    def test_toolbox_from_the_project_settings(self):
        with open(os.path.join(self.project, "tbx.py"), "w", encoding="utf-8") as f:
            f.write('"""A toolbox of the project."""\n\n'
                    'def double(n: int) -> int:\n    """Return n twice."""\n    return 2 * n\n')
        self.settings({"binary": BIN, "toolboxes": ["nothere:nh"]},
                      project={"toolboxes": ["tbx:tb"]})
        (end,) = self.python("tb.double(21)")
        self.assertIn("Out[1]: 42", self.text(end))
        tools = {t["function"]["name"]: t["function"] for t in self.model.requests[0]["tools"]}
        self.assertIn("tb.double(n: int) -> int: Return n twice.", tools["python"]["description"])

    def test_sandbox_from_settings(self):
        probe = subprocess.run([BIN, "--sandbox", "--session", "probe", "1"], env=self.env(),
                               capture_output=True)
        if probe.returncode != 0:
            self.skipTest(f"no sandbox here: {probe.stderr.decode()[-300:]}")
        secret = self.path("secret.txt")
        with open(secret, "w", encoding="utf-8") as f:
            f.write("host file")
        cell = f"import os\nos.path.exists({secret!r})"
        (plain,) = self.python(cell)
        self.assertIn("Out[1]: True", self.text(plain))
        self.settings({"binary": BIN, "sandbox": True})
        (boxed,) = self.python(cell)
        self.assertIn("Out[1]: False", self.text(boxed))
        tools = {t["function"]["name"]: t["function"] for t in self.model.requests[-1]["tools"]}
        self.assertIn("Cells run sandboxed", tools["python"]["description"])

    def test_a_bad_setting_is_an_error_result(self):
        self.settings({"binary": BIN, "toolboxes": "tbx:tb"})
        (end,) = self.python("1")
        self.assertTrue(end["isError"])
        self.assertIn("dolsot.toolboxes must be a list of strings", self.text(end))


class Package(PiCase):
    def check_loaded(self):
        (end,) = self.python("6 * 7")
        self.assertIn("Out[1]: 42", self.text(end))
        system = self.model.requests[0]["messages"][0]["content"]
        self.assertIn("<name>dolsot</name>", system)
        self.assertIn("- python: Run Python in a persistent session", system)

    def test_integrations_pi_brings_the_tool_and_the_skill(self):
        self.check_loaded()

    def test_pi_install_from_a_checkout(self):
        r = subprocess.run([support.NODE, support.PI, "install", support.PACKAGE],
                           cwd=self.project, env=self.env(), capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
        with open(os.path.join(self.agent, "settings.json"), encoding="utf-8") as f:
            settings = json.load(f)
        self.assertEqual(len(settings["packages"]), 1)
        self.assertEqual(settings["dolsot"], {"binary": BIN})
        self.package = None
        self.check_loaded()

    def test_a_clone_of_the_repository_is_the_same_package(self):
        # pi install git:... takes the clone's root: its package.json names both.
        self.package = ROOT
        self.check_loaded()


class MoreSettings(PiCase):
    def test_a_refused_store_is_an_error_result_in_dolsots_words(self):
        open_dir = self.path("open")
        os.makedirs(open_dir)
        os.chmod(open_dir, 0o777)
        self.settings({"binary": BIN, "cacheDir": open_dir})
        (end,) = self.python("1")
        self.assertTrue(end["isError"])
        self.assertIn("dolsot exited with 1 without a result", self.text(end))
        self.assertIn("refusing session directory", self.text(end))

    def test_a_namespace_dolsot_refuses_is_an_error_result_in_its_words(self):
        self.settings({"binary": BIN, "namespace": "a+b"})
        (end,) = self.python("1")
        self.assertTrue(end["isError"])
        self.assertIn("dolsot exited with 2 without a result", self.text(end))
        self.assertIn("invalid namespace 'a+b'", self.text(end))

    def test_args_from_settings_reach_every_call(self):
        self.settings({"binary": BIN, "args": ["--env", "ARGS_SEEN=yes", "--memory", "1G"]})
        (end,) = self.python("import os\nos.environ.get('ARGS_SEEN')")
        self.assertIn("Out[1]: 'yes'", self.text(end))
        tools = {t["function"]["name"]: t["function"] for t in self.model.requests[0]["tools"]}
        self.assertIn(f"memory {1 << 30}", tools["python"]["description"])
