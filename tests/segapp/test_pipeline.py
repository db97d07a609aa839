

def test_auto_backend_of_a_small_image_is_the_cpu_even_with_a_gpu(monkeypatch):
    import solver.mrf.admm_mrf as admm_mrf  # noqa: PLC0415
    from segapp.pipeline import resolve_backend  # noqa: PLC0415

    monkeypatch.setattr(admm_mrf, "gpu_available", lambda: True)
    warnings: list[str] = []
    assert resolve_backend("auto", warnings, n=10_000, k=2) == "cpu"
    assert warnings == []
