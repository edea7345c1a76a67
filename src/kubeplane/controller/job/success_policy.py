"""Whether an Indexed Job's successPolicy is met by the indexes that succeeded.

Upstream: pkg/controller/job/success_policy.go
"""
from __future__ import annotations

from ...api.types import batch_v1
from .indexed_job_utils import OrderedIntervals, parse_indexes_from_string

RULES_MATCHED_MSG = "Matched rules at index"


def match_success_policy(policy: batch_v1.SuccessPolicy | None, completions: int,
                         succeeded: OrderedIntervals) -> tuple[str, bool]:
    """(the SuccessCriteriaMet message, met) for the first rule that matches.

    A rule with succeededIndexes needs all of those indexes (or succeededCount of them); a
    rule with only succeededCount needs that many succeeded indexes. Example: rules
    [{succeededIndexes: "0", succeededCount: 1}] and index 0 succeeded -> ("Matched rules at
    index 0", True). Upstream: matchSuccessPolicy
    """
    if policy is None or not succeeded:
        return "", False
    for index, rule in enumerate(policy.rules or ()):
        if rule.succeeded_indexes is not None:
            required = parse_indexes_from_string(rule.succeeded_indexes, completions)
            if not required:
                continue                  # unparsable: the rule can never match
            if match_succeeded_indexes_rule(required, succeeded, rule.succeeded_count):
                return f"{RULES_MATCHED_MSG} {index}", True
        elif rule.succeeded_count is not None and succeeded.total() >= rule.succeeded_count:
            return f"{RULES_MATCHED_MSG} {index}", True
    return "", False


def match_succeeded_indexes_rule(rule_indexes: OrderedIntervals, succeeded: OrderedIntervals,
                                 succeeded_count: int | None) -> bool:
    """Whether succeeded covers all of rule_indexes, or at least succeeded_count of them.

    Example: rule 0-4, succeeded 1-2 and 4-6 -> 3 of the rule's indexes; count 3 matches.
    Upstream: matchSucceededIndexesRule
    """
    contains = r = s = 0
    while r < len(rule_indexes) and s < len(succeeded):
        overlap = (min(rule_indexes[r].last, succeeded[s].last)
                   - max(rule_indexes[r].first, succeeded[s].first) + 1)
        if overlap > 0:
            contains += overlap
        if succeeded[s].last < rule_indexes[r].last:
            s += 1
        else:
            r += 1
    return contains == rule_indexes.total() or (succeeded_count is not None and contains >= succeeded_count)
