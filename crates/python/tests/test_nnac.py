"""pytest suite of the nnac Python package (run by scripts/test.sh inside .venv).

Every function of the package, its error paths, and InferenceSession.run against
`nnac run` (the CLI, a separate process) and the quantized reference interpreter, bit
for bit. Uses the small bundled models only (seconds in all).
"""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import nnac

ROOT = pathlib.Path(__file__).resolve().parents[3]
TINY = ROOT / "models" / "tiny_cnn.onnx"
GATED = ROOT / "models" / "gated_cnn.onnx"


def nnac_bin():
    path = pathlib.Path(os.environ.get("NNAC_BIN", ROOT / "target" / "release" / "nnac"))
    assert path.exists(), f"{path}: build it first (cargo build --release)"
    return path


def frames(n, shape=(1, 3, 64, 64), seed=0):
    return np.random.RandomState(seed).uniform(-2, 2, (n,) + shape).astype(np.float32)


@pytest.fixture(scope="module")
def calib():
    return frames(4)


@pytest.fixture(scope="module")
def program(calib):
    return nnac.compile(TINY, calib=calib, quant_report=True)


def test_compile_describes_inputs_and_outputs(program):
    (i,) = program.inputs
    (o,) = program.outputs
    assert (i.name, i.shape, i.dtype, i.type) == ("image", [1, 3, 64, 64], "int8", "tensor(float)")
    assert o.name == "logits" and o.shape == [1, 10]
    assert i.scale > 0 and o.scale > 0
    assert program.source_model.endswith("tiny_cnn.onnx")
    report = program.quant_report
    assert isinstance(report, dict) and report, "quant_report=True keeps the report"


def test_compile_is_deterministic_and_matches_the_cli(tmp_path, program, calib):
    again = nnac.compile(TINY, calib=calib)
    assert again.to_bytes() == program.to_bytes()
    assert again.quant_report is None
    np.save(tmp_path / "calib.npy", calib)
    out = tmp_path / "cli.nnab"
    subprocess.run(
        [nnac_bin(), "compile", TINY, "--calib", tmp_path / "calib.npy", "-o", out, "-q"],
        check=True,
    )
    assert out.read_bytes() == program.to_bytes(), "nnac.compile and nnac compile differ"


def test_calibration_as_paths_lists_and_dicts(tmp_path, program, calib):
    np.save(tmp_path / "calib.npy", calib)
    by_path = nnac.compile(TINY, calib=str(tmp_path / "calib.npy"))
    by_list = nnac.compile(TINY, calib=[calib[i] for i in range(4)])
    by_dict = nnac.compile(TINY, calib={"image": tmp_path / "calib.npy"})
    for p in (by_path, by_list, by_dict):
        assert p.to_bytes() == program.to_bytes()


def test_save_load_and_bytes_round_trip(tmp_path, program):
    path = tmp_path / "tiny.nnab"
    program.save(path)
    loaded = nnac.Program.load(path)
    assert loaded.to_bytes() == program.to_bytes() == path.read_bytes()
    assert nnac.Program.from_bytes(path.read_bytes()).to_bytes() == program.to_bytes()


def test_disasm_and_verify_are_the_cli(tmp_path, program):
    path = tmp_path / "p.nnab"
    program.save(path)
    text = program.disasm()
    assert "DMA_READ" in text and "CONV" in text
    cli = subprocess.run([nnac_bin(), "disasm", path], check=True, capture_output=True, text=True)
    assert text == cli.stdout
    ok = program.verify()
    assert ok.startswith("OK: ")
    cli = subprocess.run([nnac_bin(), "verify", path], check=True, capture_output=True, text=True)
    assert cli.stdout == ok + "\n"


def run_cli(tmp_path, program, x, raw):
    prog = tmp_path / "p.nnab"
    program.save(prog)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / ("raw" if raw else "float")
    cmd = [nnac_bin(), "run", prog, "--input", f"image={tmp_path / 'x.npy'}", "--output-dir", out]
    subprocess.run(cmd + (["--raw"] if raw else []), check=True, capture_output=True)
    return np.load(out / "logits.npy")


@pytest.mark.parametrize("raw", [False, True])
def test_session_run_equals_nnac_run_bit_for_bit(tmp_path, program, raw):
    x = frames(3, seed=1)
    sess = nnac.InferenceSession(program)
    (got,) = sess.run(["logits"], {"image": x}, raw=raw)
    want = run_cli(tmp_path, program, x, raw)
    assert got.dtype == want.dtype and got.shape == want.shape == (3, 1, 10)
    assert got.tobytes() == want.tobytes()
    # One frame per call on the persistent state gives the same bytes.
    for k in range(3):
        (one,) = sess.run(None, x[k], raw=raw)
        assert one.tobytes() == want[k].tobytes()


def test_session_equals_the_quantized_reference(program, calib):
    x = frames(2, seed=2)
    want = nnac.eval_quantized(TINY, {"image": x}, calib=calib)["logits"]
    (got,) = nnac.InferenceSession(program).run(None, {"image": x})
    assert got.tobytes() == want.tobytes()


def test_session_from_a_path_and_raw_inputs(tmp_path, program):
    path = tmp_path / "p.nnab"
    program.save(path)
    sess = nnac.InferenceSession(str(path), schedule="random", seed=3)
    (i,) = sess.get_inputs()
    x = frames(1, seed=4)[0]
    codes = np.clip(np.round(x / i.scale) + i.zero_point, -128, 127).astype(np.int8)
    (by_codes,) = sess.run(None, {"image": codes})
    (by_float,) = nnac.InferenceSession(program).run(None, {"image": codes.astype(np.float32) * 0 + (codes.astype(np.float32) - i.zero_point) * i.scale})
    assert by_codes.tobytes() == by_float.tobytes()
    assert [o.name for o in sess.get_outputs()] == ["logits"]


def test_session_errors(program):
    sess = nnac.InferenceSession(program)
    x = frames(1)[0]
    with pytest.raises(nnac.UserError, match="no input 'nope'"):
        sess.run(None, {"nope": x, "image": x})
    with pytest.raises(nnac.UserError, match="missing input 'image'"):
        sess.run(None, {})
    with pytest.raises(nnac.UserError, match="expects shape 1x3x64x64"):
        sess.run(None, {"image": np.zeros((1, 3, 8, 8), np.float32)})
    with pytest.raises(nnac.UserError, match="needs float32 or int8"):
        sess.run(None, {"image": np.zeros((1, 3, 64, 64), np.uint8)})
    with pytest.raises(nnac.UserError, match="not supported"):
        sess.run(None, {"image": np.zeros((1, 3, 64, 64), np.float64)})
    with pytest.raises(nnac.UserError, match="no output 'y'"):
        sess.run(["y"], {"image": x})
    with pytest.raises(nnac.UserError, match="twice"):
        sess.run(["logits", "logits"], {"image": x})
    with pytest.raises(nnac.UserError, match="schedule 'fast'"):
        nnac.InferenceSession(program, schedule="fast")
    with pytest.raises(TypeError):
        nnac.InferenceSession(42)


def test_load_errors_name_the_file_and_offset(tmp_path, program):
    with pytest.raises(nnac.UserError, match="cannot read"):
        nnac.Program.load(tmp_path / "missing.nnab")
    bad = tmp_path / "bad.nnab"
    bad.write_bytes(program.to_bytes()[:100])
    with pytest.raises(nnac.UserError, match="bad.nnab"):
        nnac.Program.load(bad)
    with pytest.raises(nnac.UserError):
        nnac.InferenceSession(bad)


def test_compile_without_calibration_warns_and_records_it():
    with pytest.warns(UserWarning, match="synthetic calibration"):
        p = nnac.compile(TINY)
    assert nnac.profile(p)["calibration"].startswith("synthetic calibration")


def test_host_ops_option(program, calib):
    # The tiny CNN runs every op on the NNA: deny gives the same program.
    denied = nnac.compile(TINY, calib=calib, host_ops="deny")
    assert denied.disasm() == program.disasm()
    with pytest.raises(nnac.UserError, match="host ops 'maybe'"):
        nnac.compile(TINY, calib=calib, host_ops="maybe")


def test_onnxruntime_requantization_keyword(tmp_path, calib):
    # requant="onnxruntime" is the CLI's --requant onnxruntime: same program bytes, a
    # different program than the default, and the session equals the quantized
    # reference interpreter under the same rule.
    ort_rule = nnac.compile(TINY, calib=calib, requant="onnxruntime")
    assert ort_rule.to_bytes() != nnac.compile(TINY, calib=calib).to_bytes()
    np.save(tmp_path / "calib.npy", calib)
    out = tmp_path / "cli.nnab"
    subprocess.run(
        [nnac_bin(), "compile", TINY, "--calib", tmp_path / "calib.npy", "-o", out, "-q",
         "--requant", "onnxruntime"],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == ort_rule.to_bytes()
    x = frames(2, seed=5)
    want = nnac.eval_quantized(TINY, {"image": x}, calib=calib, requant="onnxruntime")
    got = nnac.InferenceSession(ort_rule).run(None, {"image": x})
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want.values()]
    with pytest.raises(nnac.UserError, match="unknown requantization 'exact'"):
        nnac.compile(TINY, calib=calib, requant="exact")


def test_compile_errors(tmp_path, calib):
    with pytest.raises(nnac.UserError, match="expects shape 1x3x64x64"):
        nnac.compile(TINY, calib=np.zeros((2, 3), np.float32))
    with pytest.raises(nnac.UserError, match="unknown calibration method 'best'"):
        nnac.compile(TINY, calib=calib, calib_method="best")
    with pytest.raises(nnac.UserError, match="unknown stage"):
        nnac.compile(TINY, calib=calib, dump_ir="nope")
    with pytest.raises(nnac.UserError, match="resident weights 'always'"):
        nnac.compile(TINY, calib=calib, resident_weights="always")
    with pytest.raises(nnac.UserError):
        nnac.compile(tmp_path / "missing.onnx", calib=calib)
    with pytest.raises(nnac.UserError, match="no such input"):
        nnac.compile(TINY, calib={"x": calib})
    with pytest.raises(TypeError):
        nnac.compile(TINY, calib=calib, no_such_option=1)


def test_compile_options_change_the_program(calib):
    base = nnac.compile(TINY, calib=calib).to_bytes()
    assert nnac.compile(TINY, calib=calib, calib_method="minmax").to_bytes() != base
    streamed = nnac.compile(TINY, calib=calib, resident_weights="off")
    assert "; prologue: runs once" in nnac.Program.from_bytes(base).disasm()
    assert "; prologue: runs once" not in streamed.disasm()


def test_profile_is_the_cli_json(tmp_path, program):
    import json

    path = tmp_path / "p.nnab"
    program.save(path)
    got = nnac.profile(path)
    cli = subprocess.run([nnac_bin(), "profile", path, "--json"], check=True, capture_output=True)
    assert got == json.loads(cli.stdout)
    assert nnac.profile(program)["total_cycles"] == got["total_cycles"] > 0
    assert nnac.profile(program, assume_packet_rule=True)["assume_packet_rule"] is True
    with pytest.raises(nnac.UserError):
        nnac.profile(program, hw=tmp_path / "missing.toml")


def test_inspect_is_the_cli_text():
    cli = subprocess.run([nnac_bin(), "inspect", TINY], check=True, capture_output=True, text=True)
    assert nnac.inspect(TINY) == cli.stdout
    assert nnac.inspect(TINY, format="dot").count("->") > 10
    assert len(nnac.inspect(TINY, full=True)) > len(cli.stdout)
    with pytest.raises(nnac.UserError, match="format 'svg'"):
        nnac.inspect(TINY, format="svg")


def test_eval_float_against_onnx_runtime():
    ort = pytest.importorskip("onnxruntime")
    x = frames(1, seed=5)[0]
    got = nnac.eval_float(TINY, {"image": x})["logits"]
    want = ort.InferenceSession(str(TINY), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    stacked = nnac.eval_float(TINY, frames(2, seed=5))["logits"]
    assert stacked.shape == (2, 1, 10)
    np.testing.assert_array_equal(stacked[0], got)


def test_eval_errors(calib):
    with pytest.raises(nnac.UserError, match="no input 'x'"):
        nnac.eval_float(TINY, {"x": calib[0]})
    with pytest.raises(nnac.UserError, match="missing input 'image'"):
        nnac.eval_float(TINY, {})
    with pytest.raises(nnac.UserError, match="needs f32 data"):
        nnac.eval_float(TINY, {"image": np.zeros((1, 3, 64, 64), np.int8)})
    with pytest.raises(nnac.UserError, match="needs calibration data"):
        nnac.eval_quantized(TINY, calib[0], calib=[])


def test_gated_model_multi_output_names():
    x = frames(2, shape=(1, 3, 48, 64), seed=6)
    p = nnac.compile(GATED, calib=x)
    (i,) = p.inputs
    sess = nnac.InferenceSession(p)
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(None, {i.name: x})
    assert len(outs) == len(names)
    rev = sess.run(names[::-1], {i.name: x})
    for a, b in zip(outs, rev[::-1]):
        assert a.tobytes() == b.tobytes()


def test_evaluate_many_frames(program):
    x = frames(20, seed=7)
    got = nnac.evaluate(program, x, progress=False)["logits"]
    (want,) = nnac.InferenceSession(program).run(None, x)
    assert got.shape == (20, 1, 10) and got.tobytes() == want.tobytes()
    raw = nnac.evaluate(program, {"image": x}, raw=True, progress=False)["logits"]
    assert raw.dtype == np.int8
    with pytest.raises(nnac.UserError, match="expects shape"):
        nnac.evaluate(program, np.zeros((2, 2), np.float32), progress=False)


def test_analyze_is_the_cli_json(tmp_path, calib):
    import json

    x = frames(3, seed=5)
    got = nnac.analyze(TINY, x, calib=calib)
    np.save(tmp_path / "calib.npy", calib)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "a.json"
    subprocess.run(
        [nnac_bin(), "analyze", TINY, "--calib", tmp_path / "calib.npy",
         "--input", tmp_path / "x.npy", "--json", out],
        check=True, capture_output=True,
    )
    assert got == json.loads(out.read_text())
    assert got["frames"] == 3 and got["ranking"]
    conv1 = next(l for l in got["layers"] if l["name"] == "conv1")
    assert conv1["entire"] == conv1["single"]
    # Without inputs the calibration frames are measured.
    assert nnac.analyze(TINY, calib=calib)["frames"] == len(calib)
    with pytest.raises(nnac.UserError, match="no layer named 'nope'"):
        nnac.analyze(TINY, x, calib=calib, float_layers=["nope"])


def test_float_layers_run_on_the_host_and_match_the_reference(calib):
    p = nnac.compile(TINY, calib=calib, float_layers=["res_a", "res_b"])
    hosts = [l for l in p.disasm().splitlines() if "host" in l.lower()]
    assert hosts, p.disasm()
    x = frames(2, seed=6)
    want = nnac.eval_quantized(TINY, {"image": x}, calib=calib, float_layers=["res_a", "res_b"])
    (got,) = nnac.InferenceSession(p).run(None, {"image": x})
    assert got.tobytes() == want["logits"].tobytes()
    auto = nnac.compile(TINY, calib=calib, auto_float=1)
    assert auto.to_bytes() != nnac.compile(TINY, calib=calib).to_bytes()


def test_analyze_without_calibration_warns():
    with pytest.warns(UserWarning, match="synthetic calibration"):
        a = nnac.analyze(TINY)
    assert a["frames"] > 0 and a["layers"]
