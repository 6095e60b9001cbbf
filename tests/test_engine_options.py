"""POPLAR_ENGINE_OPTIONS / POPLAR_TARGET_OPTIONS: parsed at configure_ipu_system, kept on the
system (autoReport.directory for reports), debug.allowOutOfMemory honoured, malformed values
are ValueErrors naming the variable and showing the text."""

import pytest

from ipu_gpu.emulation import engine_options, memory, system
from ipu_gpu.ipu import config as ipu_config


@pytest.fixture(autouse=True)
def _no_options(fresh_ipu_system, monkeypatch):
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    monkeypatch.delenv("POPLAR_TARGET_OPTIONS", raising=False)


def _configure(**poplar_options):
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.compilation_poplar_options = poplar_options
    cfg.configure_ipu_system()
    return system.current_system()


def test_unset_or_blank_means_no_options(monkeypatch):
    s = _configure()
    assert dict(s.engine_options) == {} and dict(s.target_options) == {}
    assert s.report_directory is None
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "  ")
    assert dict(_configure().engine_options) == {}


def test_report_options_are_kept_for_the_reports(monkeypatch, tmp_path):
    report = tmp_path / "report"
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS",
                       f'{{"autoReport.all":"true", "autoReport.directory":"{report}"}}')
    monkeypatch.setenv("POPLAR_TARGET_OPTIONS", '{"gatewayMode":"false"}')
    s = _configure()
    assert s.engine_options == {"autoReport.all": "true", "autoReport.directory": str(report)}
    assert s.target_options == {"gatewayMode": "false"}
    assert s.report_directory == str(report)
    assert not report.exists()  # nothing is written at configure
    with pytest.raises(TypeError):
        s.engine_options["debug.instrument"] = "true"  # read-only


def test_hardware_options_are_accepted_silently(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS",
                       '{"debug.instrument":"true", "opt.enableMultiAccessCopies":"false", '
                       '"target.hostSyncTimeout":"900", "not.an.option":"x"}')
    s = _configure()
    assert s.engine_options["target.hostSyncTimeout"] == "900"
    assert s.allow_out_of_memory is False


def test_json_booleans_and_numbers_become_their_text():
    # PyTorch Lightning's IPU plugin writes {"autoReport.all": true}
    assert engine_options.parse('{"autoReport.all": true, "a": false, "t": 600, "p": 0.5}') \
        == {"autoReport.all": "true", "a": "false", "t": "600", "p": "0.5"}


def test_allow_out_of_memory_from_the_environment_overrides_the_config(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory":"true"}')
    s = _configure()
    assert s.allow_out_of_memory and all(ipu.memory.allow_out_of_memory for ipu in s.ipus)
    s.ipus[0].memory.charge(s.ipus[0].memory_bytes + 1, "too big")  # allowed
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory":"false"}')
    s = _configure(**{"debug.allowOutOfMemory": "true"})
    assert not s.allow_out_of_memory
    assert not any(ipu.memory.allow_out_of_memory for ipu in s.ipus)
    with pytest.raises(memory.GraphMemoryAllocationError):
        s.ipus[1].memory.charge(s.ipus[1].memory_bytes + 1, "too big")
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS")
    assert _configure(**{"debug.allowOutOfMemory": "true"}).allow_out_of_memory  # config's


@pytest.mark.parametrize("env, text, match", [
    ("POPLAR_ENGINE_OPTIONS", "autoReport.all=true", "must be a JSON object of Poplar "
                                                     "options"),
    ("POPLAR_ENGINE_OPTIONS", "{'autoReport.all':'true'}", "must be a JSON object"),
    ("POPLAR_ENGINE_OPTIONS", '{"autoReport.all":"true",}', "must be a JSON object"),
    ("POPLAR_ENGINE_OPTIONS", '["autoReport.all", "true"]', "got a JSON list"),
    ("POPLAR_ENGINE_OPTIONS", '"true"', "got a JSON str"),
    ("POPLAR_TARGET_OPTIONS", "{", "must be a JSON object"),
    ("POPLAR_ENGINE_OPTIONS", '{"autoReport.all": null}',
     "option 'autoReport.all' must be a string"),
    ("POPLAR_ENGINE_OPTIONS", '{"autoReport": {"all": "true"}}',
     "option 'autoReport' must be a string"),
    ("POPLAR_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "yes"}',
     "option 'debug.allowOutOfMemory' must be \"true\" or \"false\", got 'yes'"),
])
def test_malformed_values_are_clear_errors_at_configure(monkeypatch, env, text, match):
    monkeypatch.setenv(env, text)
    with pytest.raises(ValueError) as e:
        _configure()
    message = str(e.value)
    assert message.startswith(env) and match in message
    if "JSON object" in match or "JSON list" in match or "JSON str" in match:
        assert repr(text) in message  # shows the bad text
    assert not system.is_configured()  # a configuration that fails leaves no system


def test_module_exports():
    assert engine_options.__all__ == ["ENGINE_ENV", "TARGET_ENV", "apply", "parse"]
