from optimizer.stats import paired_bootstrap_diff, said_gap, said_interval


def test_a_difference_reads_with_its_sign_and_interval():
    assert said_interval(0.1, -0.05, 0.25) == "+0.10 [-0.05, +0.25]"


def test_a_stored_difference_reads_as_the_computed_one():
    mean, low, high = paired_bootstrap_diff([1, 0, 1, 1], [0, 0, 1, 0])
    assert said_gap({"mean": mean, "low": low, "high": high, "tasks": 4}) == said_interval(mean, low, high)
    assert said_interval(mean, low, high).startswith("+0.50 [")
