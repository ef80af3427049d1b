from jaxlite import demo


def test_demo_trains_to_high_accuracy(capsys):
    result = demo.train(steps=400)
    assert result["accuracy"] > 0.95
    assert result["losses"][-1] < result["losses"][0] / 10
    assert result["step_time"] > 0 and result["compile_time"] > 0


def test_demo_plot(tmp_path):
    result = demo.train(steps=50)
    demo.plot(result, tmp_path / "demo.png")
    assert (tmp_path / "demo.png").stat().st_size > 10_000
