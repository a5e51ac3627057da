"""The Spring for Apache Kafka application (compat_tests/jvm/spring/SpringKafkaApp.java) as a real JVM process.

``spring_jars`` fetches spring-kafka 4.1 with the Java clients 4.4 (Maven Central, cached) and compiles the
application once per session; ``SpringApp`` runs it against a bootstrap and returns the JSON report of what it
observed, with the exceptions it logged at ERROR (``errors``: the logger and the exception's class) and its warnings
(``warnings``: the distinct WARN lines, numbers and names normalized, but connections refused; ``retried``: those of
requests the client retried).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent / "jvm" / "spring"
APP = HERE / "SpringKafkaApp.java"
FETCH_JARS = HERE / "fetch_jars.sh"
READY_TO_KILL = "READY-TO-KILL"
RETRIED = ", retrying ("  # the clients' warning of a request they retry (e.g. a Produce answered CONCURRENT_TRANSACTIONS)
# "HH:MM:SS.mmm LEVEL Logger: message @@ex:exception class: its message" (see log4j2.properties)
LOG_LINE = re.compile(r"^\S+ (?P<level>[A-Z]+)\s+(?P<logger>\S+): .* @@ex:(?P<exception>[\w.$]*)")


def warning(line: str, prefix: str) -> str:
    """A WARN line without its time, the run's prefix, numbers (ids, ports, offsets) and addresses."""
    text = line.split(" ", 1)[1].replace(prefix, "")
    return re.sub(r"\d+", "N", text)[:300]


def spring_classpath(build: Path) -> str | None:
    """The jars (fetched with Maven on first use) and the compiled application in ``build``, as a classpath;
    None without java, javac or Maven."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return None
    try:
        out = subprocess.run(["bash", str(FETCH_JARS)], capture_output=True, text=True, timeout=900, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    jars = Path(out.stdout.strip().splitlines()[-1])
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-d", str(build), "-cp", f"{jars}/*", str(APP)], check=True, timeout=300,
                   capture_output=True)
    return f"{build}:{jars}/*"


def run_app(classpath: str, bootstrap: str, root: Path, *, protocol: str = "classic", replication: int = 1,
            kill: Callable[[], None] | None = None, timeout: float = 900.0) -> dict:
    """Run the application once (topic and group names under a fresh prefix) and return its report, plus
    ``errors``: the sorted distinct (logger, exception class) pairs it logged at ERROR, and ``warnings``. ``kill``: called half-way
    through the failover phase (which runs only with it)."""
    root.mkdir(parents=True, exist_ok=True)
    prefix = f"sp{uuid.uuid4().hex[:6]}-"
    report_path = root / "report.json"
    log_path = root / "app.log"
    command = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}", "-cp", classpath, "SpringKafkaApp",
               bootstrap, prefix, protocol, str(replication), str(kill is not None).lower(), str(report_path)]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        try:
            assert proc.stdout is not None and proc.stdin is not None
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if line.strip() == READY_TO_KILL and kill is not None:
                    kill()
                    proc.stdin.write("killed\n")
                    proc.stdin.flush()
            proc.wait(timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log_path.read_text(errors="replace")
    if proc.returncode != 0 or not report_path.exists():
        raise AssertionError(f"the Spring application exited with {proc.returncode}; its log:\n{text[-20000:]}")
    report = json.loads(report_path.read_text())
    lines = [m for m in map(LOG_LINE.match, text.splitlines()) if m is not None]
    report["errors"] = sorted({f"{m['logger']} {m['exception'] or '-'}" for m in lines if m["level"] == "ERROR"})
    warnings = {warning(m.string, prefix) for m in lines if m["level"] == "WARN"
                and "could not be established" not in m.string}
    report["retried"] = sorted(w for w in warnings if RETRIED in w)
    report["warnings"] = sorted(w for w in warnings if RETRIED not in w)
    print(f"Spring application on {bootstrap} ({protocol}): log in {log_path}\n"
          + "\n".join(line for line in text.splitlines() if line.startswith("PHASE ")))
    return report
