import os, subprocess, sys, time, statistics
from sessionvault import records
from ..conftest import make_user, free_port

def t(cmd, env, cwd):
    xs = []
    for _ in range(7):
        s = time.perf_counter(); d = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True); xs.append(time.perf_counter() - s)
        assert d.returncode == 0, d.stderr
    return f"median {statistics.median(xs)*1000:.0f} ms, max {max(xs)*1000:.0f} ms :: {d.stdout[:90]}"

def test_timing(server, runtime, tmp_path):
    user = make_user(runtime)
    repo = tmp_path / "r"; subprocess.run(["git", "init", "-q", str(repo)]); subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:a/b.git"])
    runtime.vault.save(user.principal, records.parse(records.SaveArgs, {"name": "n", "repo": "github.com/a/b", "summary": "hello"}))
    env = {**os.environ, "SESSIONVAULT_API_KEY": user.key}
    for label, pre in (("hooks only", ""), ("with cli import", "import sessionvault.cli; ")):
        for what, url in (("live", server.url), ("closed port", f"http://127.0.0.1:{free_port()}/mcp")):
            code = pre + f"from sessionvault.hooks import main; main(['session-start', '--url', {url!r}])"
            print(f"\n{label:16} {what:12}", t([sys.executable, "-c", code], env, repo))
    print("\nbare python     ", t([sys.executable, "-c", "pass"], env, repo))
