"""Reports: escaping of hostile strings, Markdown, the PNG chart, and the HTML page in a real
headless browser (Debian's chromium driven by selenium)."""

import io
import os
import shutil
import subprocess
from dataclasses import replace

import pytest

from accelbench.analysis.facts import DRIFT
from accelbench.analysis.verdict import VERDICT
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.levers import spec_with
from accelbench.render import html_report, markdown_report, throughput_chart
from accelbench.store.db import Store
from tests.conftest import one_worker_at_a_time, run_cli

HOSTILE = '<script>window.hacked = 1</script><img src=x onerror="window.hacked = 2">'


def _results():
    def made(device, seconds, host, workload="seed-cnn", batch=64, precision="fp32"):
        return Result(
            spec=RunSpec(workload, device, batch, 20, precision=precision),
            status="ok",
            measurement=Measurement(tuple(seconds * (1 + 0.01 * i) for i in range(8))),
            peak_memory=2**28,
            peak_memory_meaning="peak RSS",
            environment={"host": host, "machine": f"{host}-1", "device_model": HOSTILE},
        )

    return [
        made("cpu", 1.0, "laptop"),
        made("cuda:0", 0.1, "server"),
        made("cuda:0", 0.05, "server", precision="bf16"),
        made("cuda:0", 0.08, "server", batch=128),
        made("cpu", 1.0, "laptop", workload=HOSTILE),
        Result(
            spec=RunSpec("vgg16", "cuda:0", 64, 1),
            status="oom",
            error=HOSTILE,
            environment={"host": "server", "machine": "server-1"},
        ),
    ]


def test_html_escapes_every_string_from_results():
    page = html_report(_results())
    assert "<script>" not in page and "onerror=" not in page.replace("onerror=&quot;", "")
    assert "&lt;script&gt;window.hacked = 1&lt;/script&gt;" in page
    assert page.count('<img class="chart"') >= 3  # throughput, ladder, memory, scaling
    assert "http://" not in page and "https://" not in page  # nothing to fetch


def test_markdown_table_escapes_pipes_and_marks_failures():
    results = _results()
    text = markdown_report(results)
    assert text.splitlines()[0].startswith("| workload | device |")
    assert "oom:" in text
    assert "laptop-1/cpu" in text and "server-1/cuda:0" in text
    weird = Result(
        spec=RunSpec("a|b", "cpu", 1, 1),
        status="ok",
        measurement=Measurement((1.0,) * 6),
        environment={"host": "h"},
    )
    assert "a\\|b" in markdown_report([weird])


def test_markdown_prints_numbers_as_the_console_does():
    """13,645 it/s, not 1.364e+04 (issue 15, item 9)."""
    fast = Result(
        spec=RunSpec("seed-cnn", "cuda:0", 64, 1),
        status="ok",
        measurement=Measurement(tuple(1 / 13645 * (1 + 0.001 * i) for i in range(8))),
        environment={"host": "h"},
    )
    text = markdown_report([fast])
    assert "e+0" not in text
    # samples/s, its CI (the it/s interval x 64 samples) and the median it/s, as the console
    assert "| 870,234 | 867,210–873,280 | 13,597 |" in text


def test_throughput_chart_is_a_png():
    png = throughput_chart(_results())
    assert png is not None and png.startswith(b"\x89PNG")
    assert throughput_chart([]) is None


def test_cli_report_markdown_and_plot(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        for r in _results():
            store.save(r)
    markdown = run_cli("report", "--format", "markdown", "--db", str(db))
    assert markdown.returncode == 0 and "| seed-cnn |" in markdown.stdout
    chart = tmp_path / "chart.png"
    assert run_cli("plot", "--out", str(chart), "--db", str(db)).returncode == 0
    assert chart.read_bytes().startswith(b"\x89PNG")
    empty = run_cli("plot", "--out", str(chart), "--workload", "nothing", "--db", str(db))
    assert empty.returncode == 2 and "nothing to plot" in empty.stderr
    nowhere = run_cli("report", "--out", str(tmp_path / "no" / "r.html"), "--db", str(db))
    assert nowhere.returncode == 2 and "cannot write" in nowhere.stderr


def _install_browser() -> str:
    """Debian's chromium and its driver: installed here if missing and we may; else why not."""
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "chromium and chromium-driver are missing and apt-get cannot run as this user"
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"],
    ):
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        if done.returncode != 0:
            return f"could not install chromium: {' '.join(command)}: {done.stderr.strip()[-200:]}"
    return "" if shutil.which("chromedriver") else "chromium-driver installed no chromedriver"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with one_worker_at_a_time(tmp_path_factory, "apt-get"):  # dpkg's lock: one install at once
        why = _install_browser()
    if why:
        pytest.skip(f"no headless browser: {why}")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium must not try to download a driver
    options = Options()
    options.binary_location = shutil.which("chromium")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,2000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def test_report_renders_in_a_real_browser_with_charts_and_no_errors(browser, tmp_path):
    from selenium.webdriver.common.by import By

    db = tmp_path / "r.db"
    with Store(db) as store:
        for r in _results():
            store.save(r)
    page = tmp_path / "report.html"
    out = run_cli("report", "--out", str(page), "--db", str(db))
    assert out.returncode == 0, out.stderr
    browser.get(page.as_uri())
    assert browser.find_element(By.TAG_NAME, "h1").text == "accelbench report"
    assert browser.execute_script("return window.hacked") is None  # the hostile name ran nothing
    assert browser.find_elements(By.TAG_NAME, "script") == []
    assert HOSTILE in browser.find_element(By.TAG_NAME, "body").text  # shown as text
    charts = browser.find_elements(By.CSS_SELECTOR, "img.chart")
    assert len(charts) >= 3
    for chart in charts:  # each chart decoded and drawn
        assert browser.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0", chart
        )
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert [url for url in fetched if not url.startswith("data:")] == []
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    browser.save_screenshot(str(tmp_path / "report.png"))


def test_a_cpu_only_report_opens_with_the_fastest_and_its_caveats_in_a_browser(browser, tmp_path):
    """Issue 27 item 10, as a reader sees it: the first section names each workload's fastest
    configuration, by how much, and its caveats; the results table has an id column matching
    the charts' labels, and no column that is "baseline" or "undetermined" on every row."""
    from selenium.webdriver.common.by import By

    db = tmp_path / "r.db"
    with Store(db) as store:
        for r in _cpu_only():
            store.save(r)
    page = tmp_path / "report.html"
    assert run_cli("report", "--out", str(page), "--db", str(db)).returncode == 0
    browser.get(page.as_uri())
    first = browser.find_elements(By.TAG_NAME, "h2")[0]
    assert first.text == "Fastest configuration per workload"
    summary = browser.find_elements(By.TAG_NAME, "table")[0]
    assert "#3 train fp32 b128" in summary.text  # the fastest, by its id
    assert "2.00x [" in summary.text and "over #1 train fp32 b32 on cpu" in summary.text
    assert "the 1-minute load average was 3.0" in summary.text  # its caveats, visible
    assert "other processes used 1.2 cores" in summary.text
    results = browser.find_elements(By.TAG_NAME, "table")[2]  # after the machine's facts
    headers = [th.text for th in results.find_elements(By.TAG_NAME, "th")]
    assert headers[0] == "id" and "vs CPU [95% CI]" not in headers and "verdict" not in headers
    ids = [row.find_elements(By.TAG_NAME, "td")[0].text for row in results.find_elements(
        By.CSS_SELECTOR, "tbody tr")]  # fmt: skip
    assert sorted(ids) == ["#1", "#2", "#3"]
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Left out, saying nothing on these results" in body
    assert "earlier runs of this configuration on this machine landed outside" in body  # history
    assert "baseline" not in results.text and "undetermined" not in results.text
    browser.set_window_size(1280, browser.execute_script("return document.body.scrollHeight"))
    browser.save_screenshot(str(tmp_path / "cpu-only.png"))


def test_the_data_parallel_chart_appears_when_process_counts_differ():
    from accelbench.render.charts import parallel_chart

    def run(processes, seconds):
        return Result(
            spec=spec_with(RunSpec("mlp", "cpu", 100, 1), processes=processes),
            status="ok",
            measurement=Measurement((seconds,) * 6),
            environment={"host": "h", "machine": "h"},
        )

    results = [run(1, 0.01), run(2, 0.012)]
    png = parallel_chart(results)
    assert png is not None and png.startswith(b"\x89PNG")
    assert parallel_chart(results[:1]) is None
    assert "Scaling with data-parallel processes" in html_report(results)


def _in_sweep(device, seconds, sweep, rid, workload="seed-cnn"):
    return Result(
        spec=RunSpec(workload, device, 64, 20),
        status="ok",
        measurement=Measurement(tuple(seconds * (1 + 0.01 * i) for i in range(8))),
        environment={"host": "h", "machine": "h-1", "device_model": "m"},
        sweep=sweep,
        id=rid,
    )


def test_the_report_compares_within_a_sweep_and_its_header_adds_up():
    # the CPU baseline of sweep "a" must not serve the GPU result of sweep "b"
    results = [
        _in_sweep("cuda:0", 0.1, "b", 3),
        _in_sweep("cuda:0", 0.1, "a", 2),
        _in_sweep("cpu", 1.0, "a", 1),
        Result(spec=RunSpec("vgg16", "cuda:0", 64, 1), status="oom", error="out of memory"),
    ]
    page = html_report(results)
    assert "4 results: 3 measured in the results table; 1 failed or unsupported" in page
    markdown = markdown_report(results)
    speedups = [
        line
        for line in markdown.splitlines()
        if line.startswith(("| #2 | seed-cnn | ", "| #3 | seed-cnn | ")) and "cuda:0" in line
    ]
    assert len(speedups) == 2  # one row per sweep
    assert sum("10.00x" in line for line in speedups) == 1  # only sweep "a" has a CPU baseline
    # no result has a verdict: the column and its words are left out
    assert "<th>verdict</th>" not in page and "undetermined (the data cannot tell" not in page
    launch = {VERDICT: {"kind": "launch-bound", "explanation": ""}}
    with_verdict = [*results[:2], replace(results[2], metrics=launch), *results[3:]]
    assert "undetermined (the data cannot tell" in html_report(with_verdict)


def test_every_bar_is_labelled_uniquely_even_for_identical_configurations():
    from accelbench.render.charts import _bar_label

    twins = [_in_sweep("cpu", 1.0, "a", 1), _in_sweep("cpu", 1.1, "b", 2)]
    assert len({_bar_label(r) for r in twins}) == 2
    assert throughput_chart(twins).startswith(b"\x89PNG")


def test_a_report_of_many_results_is_bounded_and_says_what_it_left_out():
    """10,000 results once made a 22.6 MB page of charts 64,000 pixels tall in 261 s: a
    report shows the fastest per workload and device first, its first rows, and bounded
    charts (BENCHMARKS.md: 10,000 results in under 5 s)."""
    from accelbench.render import charts
    from accelbench.render.html import html_report
    from accelbench.render.rows import TABLE_ROWS

    many = [
        Result(
            spec=RunSpec("seed-cnn", "cpu", 8 + i, 20),
            status="ok",
            measurement=Measurement((0.1 + i / 1e4,) * 6),
            id=i + 1,
            environment={"machine": "m", "host": "m"},
            sweep="s",
        )
        for i in range(TABLE_ROWS + 50)
    ]
    page = html_report(many)
    assert f"The first {TABLE_ROWS} of {TABLE_ROWS + 50} results" in page
    assert page.count("<tr>") < 2 * TABLE_ROWS + 20  # the table, the summary, the machines
    assert "Fastest configuration per workload" in page
    assert f"#{TABLE_ROWS + 50} train fp32 b{TABLE_ROWS + 57}" in page  # the most samples/s
    png = charts.throughput_chart(many)
    from PIL import Image

    height = Image.open(io.BytesIO(png)).size[1]
    assert height < 1600  # 25 bars, not 250


def _cpu_only():
    """A machine with only a CPU: three batch sizes of one workload in one sweep, measured
    under load; the fastest ran twice before, elsewhere than its interval."""
    from accelbench.analysis.facts import Rounds
    from accelbench.analysis.trust import with_trust
    from accelbench.devices.state import MachineState

    busy = MachineState(seconds=5.0, cores=2, other_cpu_cores=1.2, load_average_1m=3.0)

    def made(rid, batch, seconds, uid=""):
        samples = tuple(seconds * (1 + 0.004 * ((i * 7) % 10)) for i in range(30))
        return Result(
            spec=RunSpec("seed-cnn", "cpu", batch, 20),
            status="ok",
            measurement=Measurement(samples, (), 1, ((10, 0),) * 3),
            environment={"host": "vm", "machine": "vm-1", "device_model": "AMD EPYC"},
            sweep="s",
            id=rid,
            uid=uid or f"u{rid}",
            metrics={
                **busy.to_metrics(),
                **Rounds(passes=(1, 2, 3), planned=3, complete=True).to_metrics(),
            },
        )

    earlier = [made(90, 128, 2.0, "old1"), made(91, 128, 2.2, "old2")]
    fastest = with_trust(made(3, 128, 1.0), earlier)  # 2,560 samples/s (20 steps of 128)
    return [made(1, 32, 0.5), made(2, 64, 0.8), fastest]  # 1,280 and 1,600; stored as #1-#3


def test_a_cpu_only_report_leaves_out_what_says_nothing_and_says_so():
    from accelbench.render.rows import HEADERS

    results = _cpu_only()
    page = html_report(results)
    assert page.index("Fastest configuration per workload") < page.index("<h2>Machines")
    assert "<th>id</th>" in page and '<td class="">#3</td>' in page  # the charts' "#3 ..."
    assert "<th>vs CPU [95% CI]</th>" not in page and "<th>verdict</th>" not in page
    assert f"<th>{LATENCY}</th>" not in page
    assert "vs CPU [95% CI] (&#x27;baseline&#x27;)" in page  # what was left out, said
    assert "<dt><b>vs CPU</b></dt>" not in page and "<dt><b>id</b></dt>" in page
    text = markdown_report(results)
    header = text.splitlines()[0]
    assert header.startswith("| id | workload |") and "vs CPU" not in header
    assert "Left out, the same on every row: latency" in text
    assert len(HEADERS) > header.count(" | ") + 1


LATENCY = "latency b1 p50/p90/p99"


def test_the_optimize_charts_titles_do_not_overlap():
    """Two centred titles, the ladder's and the tolerance's, ran into each other."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from accelbench.render.charts import _draw_ladder
    from accelbench.workflows.facts import OptimizeTag

    def variant(name, seconds, precision="fp32", error=1e-7):
        tolerance = {"max_rel_error": 0.05, "min_top1": 0.95} if name == "fp32 eager" else None
        return Result(
            spec=RunSpec(
                "/tmp/newcomer/mymodels/cnn.py:make_cnn",
                "cpu",
                32,
                20,
                mode="infer",
                precision=precision,
            ),  # fmt: skip
            status="ok",
            measurement=Measurement((seconds,) * 6),
            sweep="o",
            metrics={
                **OptimizeTag(name, tolerance).to_metrics(),
                DRIFT: {"max_rel_error": error},
            },
        )

    members = [variant("fp32 eager", 1.0, error=0.0), variant("bf16", 0.5, "bf16", 0.01)]
    figure, (speed, drift) = plt.subplots(1, 2, figsize=(11, 2.3))
    _draw_ladder(speed, drift, members)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    left = [t for t in (speed.title, speed._left_title, speed._right_title) if t.get_text()]
    right = [t for t in (drift.title, drift._left_title, drift._right_title) if t.get_text()]
    assert left and right
    for a in left:
        for b in right:
            assert not a.get_window_extent(renderer).overlaps(b.get_window_extent(renderer))
    plt.close(figure)
