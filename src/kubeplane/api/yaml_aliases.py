"""YAML aliases on a budget: upstream's "document contains excessive aliasing", computed on the
node graph before anything is built from it.

PyYAML's composer resolves an alias to the anchored node itself, so a document is a graph in
which an aliased node is shared. Nine levels of `aN: &aN [*aN-1 x9]` are 514 bytes of graph
but 9^9 (387 million) nodes of tree, and every walk that treats the result as a tree (a
duplicate-key check, a JSON conversion, a validation, an encoder) pays for the tree.

Go's yaml.v2 (which sigs.k8s.io/yaml uses for YAMLToJSON) walks the tree and counts every node
it decodes (decodeCount) and those decoded inside an alias (aliasCount); past 100 aliases and
1,000 nodes it fails once aliasCount/decodeCount exceeds allowedAliasRatio(decodeCount): 99 %
up to 400,000 nodes, falling linearly to 10 % at 4,000,000. We reach the same verdict without
expanding anything: the number of nodes one expansion of a node decodes (`_expansions`) is a
property of the node alone, computed once per node; the counts then only need simulating along
the document as written, adding a whole expansion at each alias (inside an expansion both
counts grow together, so the ratio only rises and the allowance only falls: checking at the
end of an expansion gives the verdict a check at every node would).

Worked example, the 9-level bomb: a0 expands to 10 nodes (itself + 9 scalars), a1 to
1 + 9 x (1 + 10) = 100, a2 to 1 + 9 x (1 + 100) = 910, a3 to 8,200 (a8 to 484 million).
Before a3, 990 of 1,030 decoded nodes came from aliases (96 %); a3's sixth alias of a2 brings
that to 5,540 of 5,592 (99.07 %): rejected after 0.2 ms, whatever follows.

Bytes are budgeted too: a node count says nothing of a 1 MB string aliased 300 times. The JSON
size aliases add to the document may not exceed `max_growth` (the callers pass the request-body
limit: the expanded document is what the request really is).
Upstream: allowedAliasRatio, decoder.unmarshal, decoder.alias (gopkg.in/yaml.v2 decode.go).
"""
from __future__ import annotations

import re

import yaml

ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
_ALIAS_RATIO_RANGE = float(ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW)
# Counts saturate here: far beyond any count the ratio check could let through, and it keeps
# the arithmetic on a 100,000-level doubling chain small.
_SATURATED = 1 << 62
EXCESSIVE_ALIASING = "document contains excessive aliasing"


class AliasError(ValueError):
    """The document's aliases break a budget; str() is yaml.v2's message (without "yaml: ")."""


class AliasGrowthError(AliasError):
    """Aliases add more bytes than allowed (the expanded document is over the size limit)."""


def allowed_alias_ratio(decode_count: int) -> float:
    """Upstream: allowedAliasRatio (yaml.v2 decode.go)."""
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99      # 99 % may come from alias expansion for small-to-medium documents
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10      # 10 % for very large documents
    return 0.99 - 0.89 * ((decode_count - ALIAS_RATIO_RANGE_LOW) / _ALIAS_RATIO_RANGE)


def _excessive(alias_count: int, decode_count: int) -> bool:
    """The check decoder.unmarshal makes on entering each node."""
    return (alias_count > 100 and decode_count > 1000
            and alias_count / decode_count > allowed_alias_ratio(decode_count))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return []


def check(root: yaml.Node, text: str | bytes, *, max_growth: int) -> bool:
    """Raise AliasError when decoding root would break yaml.v2's alias budget, contain itself,
    or grow by more than max_growth JSON bytes; returns whether the document has aliases.

    text is the document (for the anchor's name in "anchor 'a' value contains itself").
    """
    aliases = _alias_edges(root)
    if not aliases:
        return False
    expansions, sizes, own_bytes = _expansions(root, aliases, text)
    _simulate(root, aliases, expansions)
    growth = sizes[id(root)] - own_bytes
    if growth > max_growth:
        raise AliasGrowthError(f"aliases add {growth} bytes to the document, more than {max_growth}")
    return True


def _alias_edges(root: yaml.Node) -> set[tuple[int, int]]:
    """The (parent id, child index) edges that are aliases: every occurrence of a node after
    its first in document order (the first is where its anchor was defined)."""
    seen = {id(root)}
    aliases: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        children = _children(node)
        fresh = []
        for i, child in enumerate(children):
            if id(child) in seen:
                aliases.add((id(node), i))
            else:
                seen.add(id(child))
                fresh.append(child)
        stack.extend(reversed(fresh))    # pre-order: the first child is defined first
    return aliases


def _own_bytes(node: yaml.Node) -> int:
    """A lower bound of the node's own JSON bytes (quotes, separators, brackets)."""
    if isinstance(node, yaml.ScalarNode):
        return len(node.value) + 3
    return 2


def _expansions(root: yaml.Node, aliases: set[tuple[int, int]],
                text: str | bytes) -> tuple[dict[int, int], dict[int, int], int]:
    """Per node: how many nodes decoding it visits (an alias node counts itself, then its
    target's expansion) and its expanded JSON size; plus the document's own size (each node
    once). Raises AliasError when a node contains an alias of itself."""
    counts: dict[int, int] = {}
    sizes: dict[int, int] = {}
    own_total = 0
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            count, size = 1, _own_bytes(node)
            own_total += size
            for i, child in enumerate(_children(node)):
                extra = 1 if (key, i) in aliases else 0
                count += extra + counts[id(child)]
                size += sizes[id(child)]
            counts[key], sizes[key] = min(count, _SATURATED), min(size, _SATURATED)
            in_progress.discard(key)
            continue
        if key in counts:
            continue
        in_progress.add(key)
        stack.append((node, True))
        for child in reversed(_children(node)):
            if id(child) in in_progress:
                raise AliasError(f"anchor '{_anchor_name(child, text)}' value contains itself")
            if id(child) not in counts:
                stack.append((child, False))
    return counts, sizes, own_total


def _simulate(root: yaml.Node, aliases: set[tuple[int, int]], expansions: dict[int, int]) -> None:
    """Walk the document as written with yaml.v2's two counters; raise at the first node where
    its check fails. Upstream: decoder.unmarshal, decoder.alias."""
    decode_count, alias_count = 1, 0     # the document node
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, is_alias = stack.pop()
        decode_count += 1                # the node itself (an alias node first counts itself)
        if _excessive(alias_count, decode_count):
            raise AliasError(EXCESSIVE_ALIASING)
        if is_alias:                     # then its target, every node of it inside the alias
            n = expansions[id(node)]
            decode_count += n
            alias_count += n
            if _excessive(alias_count, decode_count):
                raise AliasError(EXCESSIVE_ALIASING)
            continue
        children = _children(node)
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], (id(node), i) in aliases))


_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)")


def _anchor_name(node: yaml.Node, text: str | bytes) -> str:
    """The anchor written where node starts (libyaml's marks count characters)."""
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    m = _ANCHOR.match(s, node.start_mark.index)
    return m.group(1) if m else ""
