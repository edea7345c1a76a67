"""The HPA controller: every sync period, each HorizontalPodAutoscaler reads its target's scale,
asks the replica calculator what its metrics want, bounds that by the min/max, the rate rules
and the stabilization window, writes the new scale, and reports status and conditions.

Rate and stabilization, without spec.behavior (upstream's legacy rules): a scale-up goes at most
to max(2 x current, 4); a scale-down takes the highest recommendation of the last 5 minutes
(--horizontal-pod-autoscaler-downscale-stabilization). With spec.behavior (defaulted by the API
server: scale up by max(4 pods, 100%) per 15 s, down by 100% per 15 s, down window 300 s):
recommendation = current clamped to [min of recent ups, max of recent downs] over each
direction's window, then bounded by the policies, where a policy's limit counts from the
replicas at the start of its period. Example: 5 replicas, scaleUp policies Pods 4/60s and
Percent 100/60s with selectPolicy Max, 2 replicas added 30 s ago: the period started at 3, so
the limit is max(3 + 4, ceil(3 x 2)) = 7.

    hc = HorizontalController(factory.autoscaling_v2().horizontalpodautoscalers(),
                              factory.core_v1().pods(), clientset, recorder=recorder)
    factory.start()
    await hc.run()

Upstream: pkg/controller/podautoscaler/horizontal.go (HorizontalController), rate_limiters.go.
"""
from __future__ import annotations

import asyncio
import copy
import logging
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ...api import errors, labels, quantity, types
from ...api.types import autoscaling_v2
from ...client.tools.cache import ResourceEventHandlerFuncs, meta_namespace_key_func, split_meta_namespace_key
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...utils.clock import REAL_CLOCK, Clock, rfc3339
from . import monitor
from .clients import Combined, MetricsAnswer, PodMetricsSnapshot, ScaleClient, fetch_metric, fetch_pod_metrics
from .replica_calculator import (DEFAULT_CPU_INITIALIZATION_PERIOD, DEFAULT_DELAY_OF_INITIAL_READINESS_STATUS,
                                 DEFAULT_TOLERANCE, ReplicaCalculator, Tolerances)

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer

log = logging.getLogger(__name__)

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
DEFAULT_SYNC_PERIOD = 15.0                    # --horizontal-pod-autoscaler-sync-period
DEFAULT_DOWNSCALE_STABILIZATION = 300.0       # --horizontal-pod-autoscaler-downscale-stabilization
MAX_INT32, MIN_INT32 = 2**31 - 1, -(2**31)

Obj = dict[str, Any]


@dataclass(slots=True)
class TimestampedRecommendation:
    recommendation: int
    timestamp: float


@dataclass(slots=True)
class TimestampedScaleEvent:
    replica_change: int           # positive for a scale-up, negative for a scale-down
    timestamp: float
    outdated: bool = False


@dataclass(frozen=True, slots=True)
class NormalizationArg:
    """Upstream: NormalizationArg"""
    key: str
    scale_up_behavior: Obj
    scale_down_behavior: Obj
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int


class FixedItemIntervalRateLimiter:
    """Every item waits the same interval: an HPA is synced once per sync period.
    Upstream: FixedItemIntervalRateLimiter (rate_limiters.go)"""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def when(self, item: Any) -> float:
        return self.interval

    def forget(self, item: Any) -> None:
        pass

    def num_requeues(self, item: Any) -> int:
        return 1


@dataclass(frozen=True, slots=True)
class HorizontalControllerOptions:
    sync_period: float = DEFAULT_SYNC_PERIOD
    downscale_stabilisation_window: float = DEFAULT_DOWNSCALE_STABILIZATION
    tolerance: float = DEFAULT_TOLERANCE
    cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD
    delay_of_initial_readiness_status: float = DEFAULT_DELAY_OF_INITIAL_READINESS_STATUS


class HorizontalController:
    """Upstream: HorizontalController"""

    def __init__(self, hpa_informer: ResourceInformer[Any], pod_informer: ResourceInformer[Any], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: Any = None,
                 options: HorizontalControllerOptions = HorizontalControllerOptions()) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.options = options
        self.downscale_stabilisation_window = options.downscale_stabilisation_window
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(
            name="horizontalpodautoscaler", clock=clock, rate_limiter=FixedItemIntervalRateLimiter(options.sync_period)))
        self._informers = [hpa_informer.informer(), pod_informer.informer()]
        self.hpa_lister = hpa_informer.lister()
        self.pod_lister = pod_informer.lister()
        hpa_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.add_hpa, self.update_hpa, self.delete_hpa))
        self._counted: set[str] = set()            # the HPAs num_horizontal_pod_autoscalers counts
        transport = client.core_v1().transport
        self.scale_client = ScaleClient(transport)
        self.fetch_metrics = lambda ns, sel: fetch_pod_metrics(transport, ns, sel)     # a test seam
        # A Pods, Object or External metric's answer (custom/external metrics APIs): a test seam.
        self.fetch_metric = lambda ns, spec, sel: fetch_metric(transport, self.scale_client, ns, spec, sel)
        self.recommendations: dict[str, list[TimestampedRecommendation]] = {}
        self.scale_up_events: dict[str, list[TimestampedScaleEvent]] = {}
        self.scale_down_events: dict[str, list[TimestampedScaleEvent]] = {}
        # HPA key -> the selector of its target's pods, to find pods two HPAs would scale
        # (upstream: hpaSelectors, a BiMultimap)
        self.hpa_selectors: dict[str, Any] = {}

    # --- event handlers and the worker ------------------------------------------------------------

    def enqueue_hpa(self, obj: Any) -> None:
        """Every request waits a sync period in the queue (a key already waiting is not added
        twice), so each HPA is processed once per period. Upstream: enqueueHPA"""
        self.queue.add_rate_limited(meta_namespace_key_func(obj))

    def add_hpa(self, obj: Any) -> None:
        self.enqueue_hpa(obj)
        key = meta_namespace_key_func(obj)
        if key not in self._counted:
            self._counted.add(key)
            monitor.observe_hpa_addition()

    def update_hpa(self, old: Any, cur: Any) -> None:
        self.enqueue_hpa(cur)

    def delete_hpa(self, obj: Any) -> None:
        key = meta_namespace_key_func(obj)
        self.queue.forget(key)
        self.hpa_selectors.pop(key, None)          # upstream: hpaSelectors.DeleteSelector
        if key in self._counted:
            self._counted.discard(key)
            namespace, name = split_meta_namespace_key(key)
            monitor.observe_hpa_deletion(namespace, name)

    async def run(self, workers: int = 5) -> None:
        """Upstream: Run (--concurrent-horizontal-pod-autoscaler-syncs workers, 5)."""
        log.info("Starting HPA controller")
        try:
            for inf in self._informers:
                await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                for _ in range(workers):
                    tg.create_task(self._worker())
        finally:
            self.queue.shut_down()
            log.info("Shutting down HPA controller")

    async def _worker(self) -> None:
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """Upstream: processNextWorkItem — the key goes back for the next period unless deleted."""
        key, shutdown = await self.queue.get()
        if shutdown:
            return False
        try:
            deleted = False
            try:
                deleted = await self.reconcile_key(key)
            except Exception as err:          # upstream: utilruntime.HandleError, then the next period
                log.warning("%s", err)
            if not deleted:
                self.queue.add_rate_limited(key)
        finally:
            self.queue.done(key)
        return True

    async def reconcile_key(self, key: str) -> bool:
        """True when the HPA is gone (its memory is dropped). Upstream: reconcileKey"""
        namespace, name = split_meta_namespace_key(key)
        try:
            hpa = self.hpa_lister.horizontalpodautoscalers(namespace).get(name)
        except errors.NotFound:
            log.info("Horizontal Pod Autoscaler %s has been deleted in %s", name, namespace)
            self.recommendations.pop(key, None)
            self.scale_up_events.pop(key, None)
            self.scale_down_events.pop(key, None)
            self.hpa_selectors.pop(key, None)
            return True
        await self.reconcile_autoscaler(hpa, key)
        return False

    # --- one HPA --------------------------------------------------------------------------------------

    async def reconcile_autoscaler(self, hpa_shared: Any, key: str) -> None:
        """Upstream: reconcileAutoscaler (its deferred ObserveReconciliationResult)"""
        start, action = self.clock.monotonic(), [monitor.NONE]
        error = monitor.NONE
        try:
            await self._reconcile_autoscaler(hpa_shared, key, action)
        except monitor.ReconcileSpecError:
            error, action[0] = monitor.SPEC, monitor.NONE
            raise
        except Exception:
            error, action[0] = monitor.INTERNAL, monitor.NONE
            raise
        finally:
            monitor.observe_reconciliation_result(action[0], error, self.clock.monotonic() - start)

    async def _reconcile_autoscaler(self, hpa_shared: Any, key: str, action: list[str]) -> None:
        hpa: Obj = types.to_dict(hpa_shared)
        hpa.setdefault("status", {})
        status_original = copy.deepcopy(hpa["status"])
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        ns = hpa["metadata"].get("namespace", "")
        reference = f"{ref.get('kind', '')}/{ns}/{ref.get('name', '')}"
        try:
            scale = await self.scale_client.get(ns, ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", ""))
        except (errors.StatusError, ValueError) as e:
            msg = e.message if isinstance(e, errors.StatusError) else str(e)
            self.event(hpa_shared, "Warning", "FailedGetScale", msg)
            self.set_condition(hpa, "AbleToScale", "False", "FailedGetScale",
                               f"the HPA controller was unable to get the target's current scale: {msg}")
            await self.update_status_if_needed(hpa_shared, status_original, hpa)
            raise RuntimeError(f"failed to query scale subresource for {reference}: {msg}") from None
        self.set_condition(hpa, "AbleToScale", "True", "SucceededGetScale",
                           "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        self.record_initial_recommendation(current, key)

        min_replicas = spec["minReplicas"] if spec.get("minReplicas") is not None else 1
        max_replicas = int(spec.get("maxReplicas") or 0)
        metric_statuses: list[Obj] | None = (hpa["status"].get("currentMetrics") or None)
        desired, rescale_reason, ret_err = 0, "", None
        if current == 0 and min_replicas != 0:
            # Autoscaling is disabled for this resource.
            rescale = False
            self.set_condition(hpa, "ScalingActive", "False", "ScalingDisabled",
                               "scaling is disabled since the replica count of the target is zero")
        elif current > max_replicas:
            rescale_reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            rescale_reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            metric_desired, metric_name, metric_statuses, err = await self.compute_replicas_for_metrics(
                hpa_shared, hpa, scale, spec.get("metrics") or [])
            if err is not None and metric_desired == -1:
                self.set_current_replicas_and_metrics_in_status(hpa, current, metric_statuses)
                await self.update_status_if_needed(hpa_shared, status_original, hpa)
                self.event(hpa_shared, "Warning", "FailedComputeMetricsReplicas", err)
                raise (monitor.ReconcileSpecError if isinstance(err, monitor.SpecError) else RuntimeError)(f"failed to compute desired number of replicas based on listed metrics for "
                                   f"{reference}: {err}")
            ret_err = err           # some metrics failed: scale on the others, report it all the same
            rescale_metric = ""
            if metric_desired > desired:
                desired, rescale_metric = metric_desired, metric_name
            if desired > current:
                rescale_reason = f"{rescale_metric} above target"
            if desired < current:
                rescale_reason = "All metrics below target"
            if spec.get("behavior") is None:
                desired = self.normalize_desired_replicas(hpa, key, current, desired, min_replicas)
            else:
                desired = self.normalize_desired_replicas_with_behaviors(hpa, key, current, desired, min_replicas)
        rescale = desired != current and not (current == 0 and min_replicas != 0)

        if rescale:
            scale.setdefault("spec", {})["replicas"] = desired
            try:
                await self.scale_client.update(ns, ref.get("apiVersion", ""), ref.get("kind", ""), scale)
            except (errors.StatusError, ValueError) as e:
                msg = e.message if isinstance(e, errors.StatusError) else str(e)
                self.event(hpa_shared, "Warning", "FailedRescale",
                           f"New size: {desired}; reason: {rescale_reason}; error: {msg}")
                self.set_condition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                                   f"the HPA controller was unable to update the target scale: {msg}")
                self.set_current_replicas_and_metrics_in_status(hpa, current, metric_statuses)
                await self.update_status_if_needed(hpa_shared, status_original, hpa)
                raise RuntimeError(f"failed to rescale {reference}: {msg}") from None
            self.set_condition(hpa, "AbleToScale", "True", "SucceededRescale",
                               f"the HPA controller was able to update the target scale to {desired}")
            self.event(hpa_shared, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {rescale_reason}")
            self.store_scale_event(spec.get("behavior"), key, current, desired)
            action[0] = monitor.SCALE_UP if desired > current else monitor.SCALE_DOWN
            log.info("Successful rescale of %s, old size: %d, new size: %d, reason: %s",
                     hpa["metadata"].get("name"), current, desired, rescale_reason)
        else:
            desired = current
        self.set_status(hpa, current, desired, metric_statuses, rescale)
        monitor.observe_desired_replicas(ns, hpa["metadata"].get("name", ""), desired)
        await self.update_status_if_needed(hpa_shared, status_original, hpa)
        if ret_err is not None:
            raise (monitor.ReconcileSpecError if isinstance(ret_err, monitor.SpecError) else RuntimeError)(ret_err)

    # --- metrics --------------------------------------------------------------------------------------

    async def compute_replicas_for_metrics(self, hpa_shared: Any, hpa: Obj, scale: Obj, metric_specs: list[Obj]
                                           ) -> tuple[int, str, list[Obj], str | None]:
        """(replicas, the metric that wanted the most, statuses, error): the highest proposal of
        the valid metrics; -1 if every metric failed, or some did and the rest would scale down.
        Upstream: computeReplicasForMetrics"""
        selector = self.validate_and_parse_selector(hpa_shared, hpa, (scale.get("status") or {}).get("selector") or "")
        if isinstance(selector, str):
            return -1, "", [], selector
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        ns = hpa["metadata"].get("namespace", "")
        snapshot = await self.fetch_metrics(ns, (scale.get("status") or {}).get("selector") or "")
        replicas, metric = 0, ""
        statuses: list[Obj] = []
        invalid_count, invalid_error, invalid_condition = 0, "", None
        status_replicas = int((scale.get("status") or {}).get("replicas") or 0)
        for metric_spec in metric_specs:
            status: Obj = {}
            answer = MetricsAnswer([])
            if metric_spec.get("type") in ("Pods", "Object", "External"):
                answer = await self.fetch_metric(ns, metric_spec, (scale.get("status") or {}).get("selector") or "")
            proposal, name, condition, err = self.compute_replicas_for_metric(
                hpa_shared, hpa, metric_spec, spec_replicas, selector, snapshot, status, answer, status_replicas)
            statuses.append(status)
            if err is not None:
                if invalid_count <= 0:
                    invalid_condition, invalid_error = condition, err
                invalid_count += 1
                continue
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        err_msg = None
        if invalid_error:
            err_msg = f"invalid metrics ({invalid_count} invalid out of {len(metric_specs)}), first error is: {invalid_error}"
            if isinstance(invalid_error, monitor.SpecError):
                err_msg = monitor.SpecError(err_msg)
        if invalid_count >= len(metric_specs) or (invalid_count > 0 and replicas < spec_replicas):
            if invalid_condition is not None:
                self.set_condition(hpa, *invalid_condition)
            return -1, "", statuses, err_msg or "no metrics"
        self.set_condition(hpa, "ScalingActive", "True", "ValidMetricFound",
                           f"the HPA was able to successfully calculate a replica count from {metric}")
        return replicas, metric, statuses, err_msg

    def validate_and_parse_selector(self, hpa_shared: Any, hpa: Obj, selector: str) -> Any:
        """The parsed selector, or the error message (event and condition set).
        Upstream: validateAndParseSelector"""
        if not selector:
            self.event(hpa_shared, "Warning", "SelectorRequired", "selector is required")
            self.set_condition(hpa, "ScalingActive", "False", "InvalidSelector",
                               "the HPA target's scale is missing a selector")
            return monitor.SpecError("selector is required")
        try:
            parsed = labels.parse(selector)
        except errors.StatusError as e:
            msg = f"couldn't convert selector into a corresponding internal selector object: {e.message}"
            self.event(hpa_shared, "Warning", "InvalidSelector", msg)
            self.set_condition(hpa, "ScalingActive", "False", "InvalidSelector", msg)
            return monitor.SpecError(msg)
        ns = hpa["metadata"].get("namespace", "")
        key = f"{ns}/{hpa['metadata'].get('name', '')}"
        self.hpa_selectors[key] = parsed
        selecting = self.hpas_controlling_pods_under_selector(ns, parsed)
        if len(selecting) > 1:
            msg = f"pods by selector {selector} are controlled by multiple HPAs: [{' '.join(selecting)}]"
            self.event(hpa_shared, "Warning", "AmbiguousSelector", msg)
            self.set_condition(hpa, "ScalingActive", "False", "AmbiguousSelector", msg)
            return monitor.SpecError(msg)
        return parsed

    def hpas_controlling_pods_under_selector(self, namespace: str, selector: Any) -> list[str]:
        """The HPAs of the namespace whose selectors pick any of the selector's pods.
        Upstream: hpasControllingPodsUnderSelector"""
        pods = self.pod_lister.pods(namespace).list(selector)
        prefix = f"{namespace}/"
        return sorted(key for key, sel in self.hpa_selectors.items() if key.startswith(prefix)
                      and any(labels.matches(sel, p.metadata.labels or {}) for p in pods))

    def compute_replicas_for_metric(self, hpa_shared: Any, hpa: Obj, spec: Obj, spec_replicas: int, selector: Any,
                                    snapshot: PodMetricsSnapshot, status: Obj,
                                    answer: MetricsAnswer | None = None, status_replicas: int = 0
                                    ) -> tuple[int, str, tuple[str, str, str, str] | None, str | None]:
        """(proposal, metric name, the condition if it failed, the error); `answer` is what the
        custom or external metrics API said for a Pods/Object/External metric.
        Upstream: computeReplicasForMetric (and its deferred ObserveMetricComputationResult)"""
        start = self.clock.monotonic()
        res = self._compute_replicas_for_metric(hpa_shared, hpa, spec, spec_replicas, selector, snapshot, status,
                                                answer, status_replicas)
        err = res[3]
        if err is None:
            current = int((hpa.get("status") or {}).get("currentReplicas") or 0)
            action, error = monitor.action_for(res[0], current), monitor.NONE
        else:
            action, error = monitor.NONE, monitor.SPEC if isinstance(err, monitor.SpecError) else monitor.INTERNAL
        monitor.observe_metric_computation_result(action, error, self.clock.monotonic() - start,
                                                  spec.get("type", ""))
        return res

    def _compute_replicas_for_metric(self, hpa_shared: Any, hpa: Obj, spec: Obj, spec_replicas: int, selector: Any,
                                     snapshot: PodMetricsSnapshot, status: Obj, answer: MetricsAnswer | None,
                                     status_replicas: int
                                     ) -> tuple[int, str, tuple[str, str, str, str] | None, str | None]:
        kind = spec.get("type", "")
        if kind in ("Object", "Pods", "External"):
            calc = self.replica_calculator(Combined(snapshot, answer or MetricsAnswer([])))
            return self.compute_status_for_custom_metric(hpa_shared, hpa, spec, kind, spec_replicas, status_replicas,
                                                         selector, calc, status)
        if kind == "Resource":
            source, failed, sub = spec.get("resource") or {}, "FailedGetResourceMetric", ""
        elif kind == "ContainerResource":
            source, failed = spec.get("containerResource") or {}, "FailedGetContainerResourceMetric"
            sub = source.get("container") or ""
        else:
            err = monitor.SpecError(f'unknown metric source type "{kind}"')
            return 0, "", self.unable_to_compute(hpa_shared, "InvalidMetricSourceType", err), err
        try:
            replicas, current, name = self.compute_status_for_resource_metric_generic(
                spec_replicas, source.get("target") or {}, source.get("name") or "", hpa, sub, selector, snapshot, kind)
        except ValueError as e:
            msg = monitor.SpecError(e) if isinstance(e, _SpecValueError) else str(e)
            return 0, "", self.unable_to_compute(hpa_shared, failed, msg), msg
        if kind == "Resource":
            status.update(type="Resource", resource={"name": source.get("name"), "current": current})
        else:
            status.update(type="ContainerResource", containerResource={"name": source.get("name"), "container": sub,
                                                                       "current": current})
        return replicas, name, None, None

    def compute_status_for_resource_metric_generic(self, current_replicas: int, target: Obj, resource: str, hpa: Obj,
                                                   container: str, selector: Any, snapshot: PodMetricsSnapshot,
                                                   source_type: str) -> tuple[int, Obj, str]:
        """Upstream: computeStatusForResourceMetricGeneric"""
        calc = self.replica_calculator(snapshot)
        tolerances = self.tolerances(hpa)
        ns = hpa["metadata"].get("namespace", "")
        if target.get("averageValue") is not None:
            try:
                replicas, raw, _ = calc.get_raw_resource_replicas(
                    current_replicas, quantity.parse(target["averageValue"]).milli_value(), resource, tolerances, ns,
                    selector, container)
            except ValueError as e:
                raise ValueError(f"failed to get {resource} usage: {e}") from None
            return replicas, {"averageValue": milli_quantity(raw)}, f"{resource} resource"
        if target.get("averageUtilization") is None:
            raise _SpecValueError("invalid resource metric source: neither an average utilization target nor an "
                             "average value (usage) target was set")
        try:
            replicas, percentage, raw, _ = calc.get_resource_replicas(
                current_replicas, int(target["averageUtilization"]), resource, tolerances, ns, selector, container)
        except ValueError as e:
            raise ValueError(f"failed to get {resource} utilization: {e}") from None
        kind = "container resource" if source_type == "ContainerResource" else "resource"
        return (replicas, {"averageUtilization": percentage, "averageValue": milli_quantity(raw)},
                f"{resource} {kind} utilization (percentage of request)")

    def replica_calculator(self, metrics_client: Any) -> ReplicaCalculator:
        return ReplicaCalculator(metrics_client, self.pod_lister, clock=self.clock,
                                 cpu_initialization_period=self.options.cpu_initialization_period,
                                 delay_of_initial_readiness_status=self.options.delay_of_initial_readiness_status)

    def compute_status_for_custom_metric(self, hpa_shared: Any, hpa: Obj, spec: Obj, kind: str, spec_replicas: int,
                                         status_replicas: int, selector: Any, calc: ReplicaCalculator, status: Obj
                                         ) -> tuple[int, str, tuple[str, str, str, str] | None, str | None]:
        """A Pods, Object or External metric. Upstream: computeStatusForPodsMetric,
        computeStatusForObjectMetric, computeStatusForExternalMetric and their wrapping in
        computeReplicasForMetric (the "failed to get ... metric value" prefixes)."""
        reason = {"Object": "FailedGetObjectMetric", "Pods": "FailedGetPodsMetric",
                  "External": "FailedGetExternalMetric"}[kind]
        source = spec.get(kind.lower()) or {}
        metric = source.get("metric") or {}
        name, metric_selector = metric.get("name", ""), metric.get("selector")
        target = source.get("target") or {}
        ns = hpa["metadata"].get("namespace", "")
        tolerances = self.tolerances(hpa)
        identifier = {"name": name, **({"selector": metric_selector} if metric_selector is not None else {})}
        try:
            if metric_selector is not None:
                labels.from_label_selector(metric_selector)        # an invalid selector fails here
            if kind == "Pods":
                replicas, usage, _ = calc.get_metric_replicas(
                    spec_replicas, _milli(target.get("averageValue")), name, tolerances, ns, selector, metric_selector)
                status.update(type="Pods", pods={"metric": identifier, "current": {"averageValue": milli_quantity(usage)}})
                return replicas, f"pods metric {name}", None, None
            if kind == "Object":
                ref = source.get("describedObject") or {}
                if target.get("type") == "Value" and target.get("value") is not None:
                    replicas, usage, _ = calc.get_object_metric_replicas(
                        spec_replicas, _milli(target["value"]), name, tolerances, ns, ref, selector, metric_selector)
                    status.update(type="Object", object={"describedObject": ref, "metric": identifier,
                                                         "current": {"value": milli_quantity(usage)}})
                    return replicas, f"{ref.get('kind', '')} metric {name}", None, None
                if target.get("type") == "AverageValue" and target.get("averageValue") is not None:
                    try:
                        replicas, usage, _ = calc.get_object_per_pod_metric_replicas(
                            status_replicas, _milli(target["averageValue"]), name, tolerances, ns, ref,
                            metric_selector)
                    except ValueError as e:
                        raise _Failed(str(e), f"failed to get {name} object metric: {e}") from None
                    status.update(type="Object", object={"metric": identifier,
                                                         "current": {"averageValue": milli_quantity(usage)}})
                    return replicas, f"external metric {name}({_go_selector(metric_selector)})", None, None
                raise ValueError("invalid object metric source: neither a value target nor an average value "
                                 "target was set")
            if target.get("averageValue") is not None:
                try:
                    replicas, usage, _ = calc.get_external_per_pod_metric_replicas(
                        status_replicas, _milli(target["averageValue"]), name, tolerances, ns, metric_selector)
                except ValueError as e:
                    raise _Failed(str(e), f"failed to get {name} external metric: {e}") from None
                current = {"averageValue": milli_quantity(usage)}
            elif target.get("value") is not None:
                try:
                    replicas, usage, _ = calc.get_external_metric_replicas(
                        spec_replicas, _milli(target["value"]), name, tolerances, ns, metric_selector, selector)
                except ValueError as e:
                    raise _Failed(str(e), f"failed to get external metric {name}: {e}") from None
                current = {"value": milli_quantity(usage)}
            else:
                raise ValueError("invalid external metric source: neither a value target nor an average value "
                                 "target was set")
            status.update(type="External", external={"metric": identifier, "current": current})
            return replicas, f"external metric {name}({_go_selector(metric_selector)})", None, None
        except _Failed as e:
            err = e.wrapped
            condition = self.unable_to_compute(hpa_shared, reason, e.inner)
        except (ValueError, errors.StatusError) as e:
            msg = e.message if isinstance(e, errors.StatusError) else str(e)
            condition, err = self.unable_to_compute(hpa_shared, reason, msg), msg
        if kind != "External":
            err = f"failed to get {kind.lower()} metric value: {err}"
        return 0, "", condition, err

    def tolerances(self, hpa: Obj) -> Tolerances:
        """The controller's --horizontal-pod-autoscaler-tolerance unless the HPA's behavior sets
        its own per direction (HPAConfigurableTolerance). Upstream: HorizontalController.tolerances"""
        behavior = (hpa.get("spec") or {}).get("behavior") or {}
        down = (behavior.get("scaleDown") or {}).get("tolerance")
        up = (behavior.get("scaleUp") or {}).get("tolerance")
        default = self.options.tolerance
        return Tolerances(float(quantity.parse(down).value) if down is not None else default,
                          float(quantity.parse(up).value) if up is not None else default)

    def unable_to_compute(self, hpa_shared: Any, reason: str, err: str) -> tuple[str, str, str, str]:
        """Upstream: getUnableComputeReplicaCountCondition (the event, and the condition to set)."""
        self.event(hpa_shared, "Warning", reason, err)
        return ("ScalingActive", "False", reason, f"the HPA was unable to compute the replica count: {err}")

    # --- normalization without behavior ------------------------------------------------------------

    def record_initial_recommendation(self, current_replicas: int, key: str) -> None:
        if key not in self.recommendations:
            self.recommendations[key] = [TimestampedRecommendation(current_replicas, self.clock.now())]

    def stabilize_recommendation(self, key: str, prenormalized: int) -> int:
        """The highest recommendation within the downscale window (the oldest outside it is
        replaced by this one). Upstream: stabilizeRecommendation"""
        now = self.clock.now()
        max_recommendation, old_index = prenormalized, None
        cutoff = now - self.downscale_stabilisation_window
        recs = self.recommendations.setdefault(key, [])
        for i, rec in enumerate(recs):
            if rec.timestamp < cutoff:
                old_index = i
            elif rec.recommendation > max_recommendation:
                max_recommendation = rec.recommendation
        if old_index is not None:
            recs[old_index] = TimestampedRecommendation(prenormalized, now)
        else:
            recs.append(TimestampedRecommendation(prenormalized, now))
        return max_recommendation

    def normalize_desired_replicas(self, hpa: Obj, key: str, current: int, prenormalized: int, min_replicas: int) -> int:
        """Upstream: normalizeDesiredReplicas"""
        stabilized = self.stabilize_recommendation(key, prenormalized)
        if stabilized != prenormalized:
            self.set_condition(hpa, "AbleToScale", "True", "ScaleDownStabilized",
                               "recent recommendations were higher than current one, applying the highest recent "
                               "recommendation")
        else:
            self.set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        desired, reason, message = convert_desired_replicas_with_rules(
            current, stabilized, min_replicas, int((hpa.get("spec") or {}).get("maxReplicas") or 0))
        self.set_condition(hpa, "ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    # --- normalization with behavior ----------------------------------------------------------------

    def normalize_desired_replicas_with_behaviors(self, hpa: Obj, key: str, current: int, prenormalized: int,
                                                  min_replicas: int) -> int:
        """Upstream: normalizeDesiredReplicasWithBehaviors"""
        behavior = hpa["spec"]["behavior"]
        self.maybe_init_scale_down_stabilization_window(hpa)
        arg = NormalizationArg(key, behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {}, min_replicas,
                               int(hpa["spec"].get("maxReplicas") or 0), current, prenormalized)
        stabilized, reason, message = self.stabilize_recommendation_with_behaviors(arg)
        if stabilized != prenormalized:
            self.set_condition(hpa, "AbleToScale", "True", reason, message)
        else:
            self.set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        arg = NormalizationArg(arg.key, arg.scale_up_behavior, arg.scale_down_behavior, arg.min_replicas,
                               arg.max_replicas, arg.current_replicas, stabilized)
        desired, reason, message = self.convert_desired_replicas_with_behavior_rate(arg)
        self.set_condition(hpa, "ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    def maybe_init_scale_down_stabilization_window(self, hpa: Obj) -> None:
        """A scaleDown without a window takes the controller's. Upstream: maybeInitScaleDownStabilizationWindow"""
        behavior = hpa["spec"]["behavior"]
        down = behavior.setdefault("scaleDown", {})
        if down.get("stabilizationWindowSeconds") is None:
            down["stabilizationWindowSeconds"] = int(self.downscale_stabilisation_window)

    def stabilize_recommendation_with_behaviors(self, args: NormalizationArg) -> tuple[int, str, str]:
        """The current count brought within [lowest recent recommendation over the up window,
        highest over the down window]; this recommendation recorded. Upstream:
        stabilizeRecommendationWithBehaviors"""
        now = self.clock.now()
        up_recommendation = down_recommendation = args.desired_replicas
        up_cutoff = now - (args.scale_up_behavior.get("stabilizationWindowSeconds") or 0)
        down_cutoff = now - (args.scale_down_behavior.get("stabilizationWindowSeconds") or 0)
        recs = self.recommendations.setdefault(args.key, [])
        old_index = None
        for i, rec in enumerate(recs):
            if rec.timestamp > up_cutoff:
                up_recommendation = min(rec.recommendation, up_recommendation)
            if rec.timestamp > down_cutoff:
                down_recommendation = max(rec.recommendation, down_recommendation)
            if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
                old_index = i
        recommendation = max(args.current_replicas, up_recommendation)
        recommendation = min(recommendation, down_recommendation)
        if old_index is not None:
            recs[old_index] = TimestampedRecommendation(args.desired_replicas, now)
        else:
            recs.append(TimestampedRecommendation(args.desired_replicas, now))
        if args.desired_replicas >= args.current_replicas:
            return (recommendation, "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation")
        return (recommendation, "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation")

    def convert_desired_replicas_with_behavior_rate(self, args: NormalizationArg) -> tuple[int, str, str]:
        """Upstream: convertDesiredReplicasWithBehaviorRate"""
        now = self.clock.now()
        ups, downs = self.scale_up_events.get(args.key, []), self.scale_down_events.get(args.key, [])
        if args.desired_replicas > args.current_replicas:
            limit = max(calculate_scale_up_limit_with_scaling_rules(args.current_replicas, ups, downs,
                                                                    args.scale_up_behavior, now),
                        args.current_replicas)      # no further up until the events age out
            if args.max_replicas > limit:
                maximum, reason, message = limit, "ScaleUpLimit", \
                    "the desired replica count is increasing faster than the maximum scale rate"
            else:
                maximum, reason, message = args.max_replicas, "TooManyReplicas", \
                    "the desired replica count is more than the maximum replica count"
            if args.desired_replicas > maximum:
                return maximum, reason, message
        elif args.desired_replicas < args.current_replicas:
            limit = min(calculate_scale_down_limit_with_behaviors(args.current_replicas, ups, downs,
                                                                  args.scale_down_behavior, now),
                        args.current_replicas)
            if args.min_replicas < limit:
                minimum, reason, message = limit, "ScaleDownLimit", \
                    "the desired replica count is decreasing faster than the maximum scale rate"
            else:
                minimum, reason, message = args.min_replicas, "TooFewReplicas", \
                    "the desired replica count is less than the minimum replica count"
            if args.desired_replicas < minimum:
                return minimum, reason, message
        return args.desired_replicas, "DesiredWithinRange", "the desired count is within the acceptable range"

    def store_scale_event(self, behavior: Obj | None, key: str, prev: int, new: int) -> None:
        """Remember a rescale for the policies' periods (an outdated event's slot is reused).
        Upstream: storeScaleEvent"""
        if behavior is None:
            return
        now = self.clock.now()
        up = new > prev
        events = (self.scale_up_events if up else self.scale_down_events).setdefault(key, [])
        rules = behavior.get("scaleUp" if up else "scaleDown") or {}
        mark_scale_events_outdated(events, get_longest_policy_period(rules), now)
        change = new - prev if up else prev - new
        for i, event in enumerate(events):
            if event.outdated:
                events[i] = TimestampedScaleEvent(change, now)
                return
        events.append(TimestampedScaleEvent(change, now))

    # --- status -----------------------------------------------------------------------------------------

    def set_condition(self, hpa: Obj, type_: str, status: str, reason: str, message: str) -> None:
        """Upstream: setCondition / setConditionInList (the transition time moves with the status)."""
        conditions = hpa["status"].setdefault("conditions", [])
        existing = next((c for c in conditions if c.get("type") == type_), None)
        if existing is None:
            existing = {"type": type_}
            conditions.append(existing)
        if existing.get("status") != status:
            existing["lastTransitionTime"] = rfc3339(self.clock.now())
        existing.update(status=status, reason=reason, message=message)

    def set_status(self, hpa: Obj, current: int, desired: int, metric_statuses: list[Obj] | None, rescale: bool) -> None:
        """Upstream: setStatus"""
        status = hpa["status"]
        new: Obj = {"currentReplicas": current, "desiredReplicas": desired}
        if status.get("lastScaleTime"):
            new["lastScaleTime"] = status["lastScaleTime"]
        if metric_statuses:
            new["currentMetrics"] = metric_statuses
        if status.get("conditions"):
            new["conditions"] = status["conditions"]
        if rescale:
            new["lastScaleTime"] = rfc3339(self.clock.now())
        hpa["status"] = new

    def set_current_replicas_and_metrics_in_status(self, hpa: Obj, current: int, metric_statuses: list[Obj] | None
                                                   ) -> None:
        self.set_status(hpa, current, int(hpa["status"].get("desiredReplicas") or 0), metric_statuses, False)

    async def update_status_if_needed(self, hpa_shared: Any, old_status: Obj, hpa: Obj) -> None:
        """Upstream: updateStatusIfNeeded / updateStatus"""
        if old_status == hpa["status"]:
            return
        client = self.client.autoscaling_v2().horizontalpodautoscalers(hpa["metadata"].get("namespace", ""))
        try:
            await client.update_status(types.from_dict(hpa, autoscaling_v2.HorizontalPodAutoscaler))
        except errors.StatusError as e:
            self.event(hpa_shared, "Warning", "FailedUpdateStatus", e.message)
            raise RuntimeError(f"failed to update status for {hpa['metadata'].get('name')}: {e.message}") from None
        log.debug("Successfully updated status for %s", hpa["metadata"].get("name"))

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)


class _Failed(Exception):
    """A metric failed: the calculator's error (the event's and condition's) and the wrapped one returned."""

    def __init__(self, inner: str, wrapped: str) -> None:
        super().__init__(wrapped)
        self.inner, self.wrapped = inner, wrapped


def _milli(value: Any) -> int:
    return quantity.parse(str(value)).milli_value() if value is not None else 0


def _go_selector(selector: Obj | None) -> str:
    """Go's %+v of a *metav1.LabelSelector (what upstream's metric names print)."""
    if selector is None:
        return "nil"
    labels_ = ",".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    match = f"map[string]string{{{labels_}}}" if selector.get("matchLabels") else "map[string]string{}"
    exprs = ",".join(f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
                     f"Values:[]string{{{','.join(e.get('values') or [])}}},}}"
                     for e in selector.get("matchExpressions") or [])
    return f"&LabelSelector{{MatchLabels:{match},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"


# --- the rules, as functions of their inputs (upstream's free functions) ------------------------------

class _SpecValueError(ValueError):
    """A metric source the HPA's spec got wrong (upstream wraps errSpec)."""


def calculate_scale_up_limit(current_replicas: int) -> int:
    """Upstream: calculateScaleUpLimit"""
    return int(max(SCALE_UP_LIMIT_FACTOR * current_replicas, SCALE_UP_LIMIT_MINIMUM))


def convert_desired_replicas_with_rules(current: int, desired: int, hpa_min: int, hpa_max: int) -> tuple[int, str, str]:
    """Bound by min/max and the legacy scale-up rate. Upstream: convertDesiredReplicasWithRules"""
    scale_up_limit = calculate_scale_up_limit(current)
    if hpa_max > scale_up_limit:
        maximum, condition, reason = scale_up_limit, "ScaleUpLimit", \
            "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum, condition, reason = hpa_max, "TooManyReplicas", \
            "the desired replica count is more than the maximum replica count"
    if desired < hpa_min:
        return hpa_min, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > maximum:
        return maximum, condition, reason
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def get_replicas_change_per_period(period_seconds: int, events: list[TimestampedScaleEvent], now: float) -> int:
    """Upstream: getReplicasChangePerPeriod"""
    cutoff = now - period_seconds
    return sum(e.replica_change for e in events if e.timestamp > cutoff)


def _period_start(current: int, policy: Obj, ups: list[TimestampedScaleEvent], downs: list[TimestampedScaleEvent],
                  now: float) -> int:
    period = int(policy.get("periodSeconds") or 0)
    return current - get_replicas_change_per_period(period, ups, now) + get_replicas_change_per_period(period, downs, now)


def calculate_scale_up_limit_with_scaling_rules(current: int, ups: list[TimestampedScaleEvent],
                                                downs: list[TimestampedScaleEvent], rules: Obj, now: float) -> int:
    """Upstream: calculateScaleUpLimitWithScalingRules"""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    pick, result = (min, MAX_INT32) if select == "Min" else (max, MIN_INT32)
    for policy in rules.get("policies") or []:
        start = _period_start(current, policy, ups, downs, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value
        else:     # Percent: rounded up, or a small target could never grow (float64, as Go)
            proposed = math.ceil(start * (1 + value / 100))
        result = pick(result, proposed)
    return result


def calculate_scale_down_limit_with_behaviors(current: int, ups: list[TimestampedScaleEvent],
                                              downs: list[TimestampedScaleEvent], rules: Obj, now: float) -> int:
    """Upstream: calculateScaleDownLimitWithBehaviors"""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    pick, result = (max, MIN_INT32) if select == "Min" else (min, MAX_INT32)
    for policy in rules.get("policies") or []:
        start = _period_start(current, policy, ups, downs, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start - value
        else:     # Percent: Go's int32() truncates
            proposed = int(start * (1 - value / 100))
        result = pick(result, proposed)
    return result


def get_longest_policy_period(rules: Obj) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or []), default=0)


def mark_scale_events_outdated(events: list[TimestampedScaleEvent], longest_period: int, now: float) -> None:
    cutoff = now - longest_period
    for e in events:
        if e.timestamp < cutoff:
            e.outdated = True


def milli_quantity(milli: int) -> str:
    """resource.NewMilliQuantity(v, DecimalSI).String(): 1500 -> "1500m", 2000 -> "2"."""
    return str(quantity.Quantity(Fraction(milli, 1000)))
