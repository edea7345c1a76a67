"""Time and MicroTime fields of a typed object are stored and answered as the Go types write
them (UTC; Time to the second, MicroTime to the microsecond), and a value time.Parse refuses is
the decode's 400. Upstream: metav1.Time / MicroTime UnmarshalJSON and MarshalJSON
(apimachinery pkg/apis/meta/v1/time.go, micro_time.go) inside the handlers' decode."""
from __future__ import annotations

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
EVENTS = "/api/v1/namespaces/default/events"


async def test_lease_micro_times_are_utc_microseconds(api) -> None:
    # the official Python client's isoformat(): "+00:00"; any offset is converted
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me",
                                                 "renewTime": "2026-11-28T07:56:55.332476+02:00",
                                                 "acquireTime": "2026-11-28T05:56:55.332476+00:00"}}
    r = await api.create(LEASES, lease)
    assert r.status == 201, r.json
    assert r.json["spec"]["renewTime"] == "2026-11-28T05:56:55.332476Z"
    assert r.json["spec"]["acquireTime"] == "2026-11-28T05:56:55.332476Z"
    assert (await api.get(f"{LEASES}/l")).json["spec"]["renewTime"] == "2026-11-28T05:56:55.332476Z"
    r = await api.call("PATCH", f"{LEASES}/l", body={"spec": {"renewTime": "2026-11-28T06:00:00.000001-01:00"}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.json["spec"]["renewTime"] == "2026-11-28T07:00:00.000001Z"


async def test_event_times_to_the_second(api) -> None:
    ev = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
          "reason": "R", "message": "m", "type": "Normal", "source": {"component": "c"},
          "firstTimestamp": "2026-11-28T07:56:55.5+02:00", "lastTimestamp": "2026-11-28T05:56:55.999Z"}
    r = await api.create(EVENTS, ev)
    assert r.status == 201, r.json
    assert (r.json["firstTimestamp"], r.json["lastTimestamp"]) == ("2026-11-28T05:56:55Z", "2026-11-28T05:56:55Z")


async def test_a_time_go_cannot_parse_is_a_400(api) -> None:
    r = await api.create(LEASES, {"metadata": {"name": "bad"}, "spec": {"renewTime": "yesterday"}})
    assert r.status == 400
    assert r.json["message"] == ('Lease in version "v1" cannot be handled as a Lease: parsing time "yesterday" as '
                                 '"2006-01-02T15:04:05.000000Z07:00": cannot parse "yesterday" as "2006"')
    r = await api.create(LEASES, {"metadata": {"name": "bad"}, "spec": {"renewTime": "2026-11-28T05:56:55Z"}})
    assert r.status == 400      # a MicroTime without its six digits
    assert (await api.get(f"{LEASES}/bad")).status == 404
