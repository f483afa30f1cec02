"""The FailedScheduling text: upstream's ``FitError.Error()`` (framework/types.go).

The PostFilter message is appended after one space as it is: upstream adds no period
of its own, so DefaultPreemption's message (itself a FitError text) keeps its one final
period and the whole message never ends with two.
"""

from __future__ import annotations

import pytest

from ksched.framework.diagnosis import fit_error_message


@pytest.mark.parametrize(
    ("counts", "pre_filter", "post_filter", "want"),
    [
        pytest.param(
            {"Insufficient cpu": 3, "node(s) were unschedulable": 1},
            "",
            "",
            "0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu.",
            id="histogram-sorted-as-strings",
        ),
        pytest.param(
            {"Insufficient cpu": 4},
            "",
            "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
            "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are "
            "available: 4 Preemption is not helpful for scheduling.",
            id="post-filter-message-keeps-its-own-single-period",
        ),
        pytest.param(
            {},
            "pod affinity terms conflict",
            "preemption: not eligible due to preemptionPolicy=Never.",
            "0/4 nodes are available: pod affinity terms conflict. preemption: not eligible "
            "due to preemptionPolicy=Never.",
            id="pre-filter-message-then-post-filter-message",
        ),
        pytest.param(
            {"Insufficient cpu": 4},
            "",
            "no candidate node for preemption",
            "0/4 nodes are available: 4 Insufficient cpu. no candidate node for preemption",
            id="a-post-filter-message-without-period-gets-none",
        ),
    ],
)
def test_fit_error_message(
    counts: dict[str, int], pre_filter: str, post_filter: str, want: str
) -> None:
    got = fit_error_message(4, counts, pre_filter_msg=pre_filter, post_filter_msg=post_filter)
    assert got == want
