"""The launched app through gradio_client: a run over the API, the streaming UI endpoint, and clear
errors (never tracebacks) for bad input. Small runs only: the machine is a shared 2-core CPU."""

import pytest
from app_server import fast_model_id, launched_app

from opttree.trace_file import validate_trace

gradio_client = pytest.importorskip("gradio_client")
from gradio_client.exceptions import AppError  # noqa: E402

PROMPT = "Name three colours of the rainbow."


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    with launched_app(tmp_path_factory.mktemp("api")) as (url, _):
        yield url


@pytest.fixture(scope="module")
def client(launched):
    return gradio_client.Client(launched, verbose=False)


def generate(client, **kw):
    args = dict(model=fast_model_id(), prompt=PROMPT, method="opt-tree", nodes=20, max_depth=4,
                threshold=0.1, temperature=0.0, max_new_tokens=12)
    args.update(kw)
    return client.predict(*args.values(), api_name="/generate")


def test_generate_returns_a_valid_trace(client):
    trace = generate(client)
    validate_trace(trace)
    assert trace["meta"]["method"] == "opt-tree" and trace["meta"]["nodes"] == 20
    assert 1 <= trace["summary"]["new_tokens"] <= 12 and trace["steps"]
    assert all(len(s["tokens"]) <= 20 and max(s["depth"], default=0) <= 4 for s in trace["steps"])


def test_greedy_tree_output_equals_autoregressive(client):
    ar = generate(client, method="ar")
    tree = generate(client, method="opt-tree")
    assert tree["output_ids"] == ar["output_ids"] and tree["output_text"] == ar["output_text"]


@pytest.mark.parametrize("kw,needle", [
    (dict(model="HuggingFaceTB/evil-remote-code"), "unknown model"),
    (dict(prompt="   \n\t "), "prompt is empty"),
    (dict(nodes=1000), "nodes must be between"),
    (dict(max_depth=0), "max_depth must be between"),
    (dict(threshold=-1), "threshold must be between"),
    (dict(nodes="lots"), "nodes must be a number"),
    (dict(method="beam-search"), "unknown method"),
    (dict(seed=-3), "seed must be between"),
    (dict(seed=2.5), "seed must be a whole number"),
    (dict(seed=0, tree_temperature=0.01), "tree_temperature must be 0"),
])
def test_bad_input_gives_a_clear_message(client, kw, needle):
    with pytest.raises(AppError) as err:
        generate(client, **kw)
    assert needle in str(err.value) and "Traceback" not in str(err.value)


def test_tree_temperature_setting_reshapes_trees_not_text(client):
    """The slider's value reaches the drafter (recorded in the trace), 0 keeps the draft's fitted one."""
    fitted = generate(client, nodes=30, max_depth=8)
    sharp = generate(client, nodes=30, max_depth=8, seed=0, tree_temperature=0.3)
    assert sharp["meta"]["tree_temperature"] == 0.3 != fitted["meta"]["tree_temperature"]
    assert sharp["output_ids"] == fitted["output_ids"]
    assert [s["tokens"] for s in sharp["steps"]] != [s["tokens"] for s in fitted["steps"]]


def test_the_seed_picks_the_sample(client):
    """Sampling is reproducible with a seed, and another seed draws another text."""
    def sample(seed):
        return generate(client, temperature=1.5, max_new_tokens=10, seed=seed)
    first, again, other = sample(7), sample(7), sample(8)
    assert first["output_ids"] == again["output_ids"] and first["meta"]["seed"] == 7
    assert other["output_ids"] != first["output_ids"] and other["meta"]["seed"] == 8


def test_ui_run_endpoint_streams_steps(client):
    job = client.submit(fast_model_id(), PROMPT, "opt-tree", 16, 4, 0.1, 0.0, 8, api_name="/run")
    final = job.result(timeout=300)
    outputs = job.outputs()
    assert len(outputs) >= 2                           # one update per decoded step
    status = final[7]
    assert status.startswith("Done") or "Done:" in status
    step = final[0]
    assert step is not None


def test_ui_endpoints_name_every_parameter(client):
    """gradio_client users see each /run and /compare parameter by its setting's name, and can pass it so."""
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for api in ("/run", "/compare", "/generate"):
        names = [p["parameter_name"] for p in endpoints[api]["parameters"]]
        assert names[:5] == ["model", "prompt", "method", "nodes", "max_depth"], (api, names)
        assert not [n for n in names if n.startswith("param_")], (api, names)
    final = client.predict(model=fast_model_id(), prompt=PROMPT, method="chain", nodes=4, max_new_tokens=3,
                           nodes_mode="fixed", api_name="/run")
    assert final[7].startswith("Done") and "/3 tokens" in final[7]


def test_server_still_serves_after_errors(client):
    with pytest.raises(AppError):
        generate(client, prompt="")
    assert generate(client, max_new_tokens=3)["summary"]["new_tokens"] >= 1


def test_ui_endpoint_only_accepts_listed_models(client):
    # /run takes its inputs raw (so a setting typed past a slider's end is named, not a bare "Error"): the
    # allow-list refuses a pair it does not list, the status says so and shows the value as text.
    out = client.predict("<img src=x onerror=alert(1)>", PROMPT, "opt-tree", 16, 4, 0.1, 0.0, 8, api_name="/run")
    said = [o for o in out if "unknown model" in str(o)]
    assert said and all("<img" not in str(o) for o in said)


def test_ui_endpoints_refuse_a_fraction_for_a_whole_number_as_generate_does(client):
    """/run and /compare take the controls' raw values: a fraction for a whole-number setting is refused with
    the same sentence as /generate's (config.checked_number, with the control's label), not rounded and run."""
    with pytest.raises(AppError, match="nodes must be a whole number, got 60.5"):
        generate(client, nodes=60.5)
    for api in ("/run", "/compare"):
        out = client.predict(model=fast_model_id(), prompt=PROMPT, method="chain", nodes=60.5, nodes_mode="fixed",
                             api_name=api)
        assert [o for o in out if "Nodes must be a whole number, got 60.5." in str(o)], (api, out)


def test_the_page_serves_its_stylesheet_and_keys_from_assets(launched):
    """The launched page's config carries assets/app.css (colours filled in), and assets/keys.js, assets/app.js
    and assets/fit_labels.js as they are, in the one function page_js gives Gradio."""
    import httpx

    from opttree import paths
    from ui.app import page_js  # the page's own modules, here as above: the other tests only talk HTTP
    from viz import style

    config = httpx.get(launched + "config", timeout=30).json()
    css = (paths.PAGE_ASSETS / "app.css").read_text(encoding="utf-8")
    assert style.PAGE_CSS in config["css"] and ".gen-text .tok.current" in css
    assert all(line in config["css"] for line in css.splitlines() if "${" not in line)
    assert config["js"] == page_js()
    for name in ("keys.js", "app.js", "fit_labels.js"):
        assert (paths.PAGE_ASSETS / name).read_text(encoding="utf-8").strip() in config["js"], name
    assert "ArrowRight" in config["js"] and "fitLabels" in config["js"]
    # No Markdown block draws $$…$$ as KaTeX maths (ui/app.py no_maths): names from traces show as written.
    markdown = [c["props"] for c in config["components"] if c.get("type") == "markdown"]
    assert len(markdown) > 20 and all(props.get("latex_delimiters") == [] for props in markdown)


def test_status_messages_show_visitor_text_as_text():
    from viz.style import md_text

    shown = md_text("unknown model '<img src=x onerror=alert(1)>' [x](javascript:y) *b*")
    assert "<img" not in shown and "&lt;img" in shown
    assert "\\[x\\]\\(javascript" in shown and "\\*b\\*" in shown
