import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_api_table_is_up_to_date():
    spec = importlib.util.spec_from_file_location("generate_api_table", ROOT / "docs" / "generate_api_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "api.md").read_text() == module.render(), \
        "docs/api.md is stale: run python docs/generate_api_table.py"
