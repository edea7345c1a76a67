"""Quantities a client may send that cost the server nothing special.

"1e999999999" is a well-formed quantity (upstream holds it as an inf.Dec, scale -999999999);
computing it exactly as a Fraction took minutes and gigabytes of the event loop before
api/quantity.py stopped at MAX_EXPONENT.
"""
from __future__ import annotations


async def test_a_huge_exponent_is_answered_like_any_quantity(api) -> None:
    p = api.pod("huge")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e999999999", "memory": "1e-999999999"}}
    r = await api.create(api.PODS, p)
    assert r.status == 201, r.json
    # the first kept as sent (past MAX_EXPONENT), the second rounded up to a nano as upstream
    assert r.json["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1e999999999", "memory": "1e-9"}
    assert r.json["status"]["qosClass"] == "Burstable"


async def test_quantities_are_stored_and_answered_canonical(api) -> None:
    """Quantity.UnmarshalJSON/MarshalJSON: what upstream answers is String() of what was sent."""
    p = api.pod("canon")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0.5", "memory": "1024Mi"},
                                               "limits": {"cpu": "1000m", "memory": 1073741824}}
    p["spec"]["volumes"] = [{"name": "v", "emptyDir": {"sizeLimit": "1.5Ki"}}]
    r = await api.create(api.PODS, p)
    assert r.status == 201, r.json
    want = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1073741824"}}
    assert r.json["spec"]["containers"][0]["resources"] == want
    assert r.json["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1536"
    got = (await api.get(f"{api.PODS}/canon")).json
    assert got["spec"]["containers"][0]["resources"] == want
    assert got["status"]["qosClass"] == "Burstable"          # cpu: 500m requested, 1 the limit
