"""Issue 12's demonstrations with real credentials: a ServiceAccount's own token (`kubectl
create token`) bound to a namespaced Role lists pods there and nothing else, `--as` is refused
without the `impersonate` verb, and a Role granting more than its creator holds is refused
(escalation), each with upstream's message as kubectl prints it."""
from __future__ import annotations

import pathlib

import pytest
import yaml

from .cluster import Cluster

NS = "team-b"
SETUP = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: robot, namespace: {NS}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-lister, namespace: {NS}}}
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles"]
  verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: robot-lists-pods, namespace: {NS}}}
subjects:
- kind: ServiceAccount
  name: robot
roleRef: {{kind: Role, name: pod-lister, apiGroup: rbac.authorization.k8s.io}}
"""
ROBOT = f"system:serviceaccount:{NS}:robot"


@pytest.fixture(scope="module")
def robot(cluster: Cluster) -> pathlib.Path:
    """A kubeconfig holding only the robot's token, minted by `kubectl create token`."""
    cluster.kubectl("apply", "-f", "-", input=SETUP)
    token = cluster.kubectl("create", "token", "robot", "-n", NS).stdout.strip()
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": token}
    path = cluster.data_dir / "robot.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path


def as_robot(cluster: Cluster, robot: pathlib.Path, *args: str, input: str | None = None) -> tuple[int, str]:
    res = cluster.kubectl("--kubeconfig", str(robot), *args, check=False, input=input)
    return res.returncode, res.stdout + res.stderr


def test_the_token_lists_pods_in_its_namespace_and_nothing_else(cluster: Cluster, robot: pathlib.Path) -> None:
    assert as_robot(cluster, robot, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}") == (0, ROBOT)
    code, out = as_robot(cluster, robot, "get", "pods", "-n", NS)
    assert code == 0 and "No resources found" in out
    code, out = as_robot(cluster, robot, "get", "pods", "-n", "default")
    assert code != 0 and (f'Error from server (Forbidden): pods is forbidden: User "{ROBOT}" cannot list resource '
                          f'"pods" in API group "" in the namespace "default"') in out
    code, out = as_robot(cluster, robot, "get", "secrets", "-n", NS)
    assert code != 0 and f'User "{ROBOT}" cannot list resource "secrets"' in out
    code, out = as_robot(cluster, robot, "delete", "pod", "anything", "-n", NS)
    assert code != 0 and f'User "{ROBOT}" cannot delete resource "pods"' in out


def test_as_is_refused_without_the_impersonate_verb(cluster: Cluster, robot: pathlib.Path) -> None:
    code, out = as_robot(cluster, robot, "--as", "alice", "get", "pods", "-n", NS)
    assert code != 0 and (f'Error from server (Forbidden): users "alice" is forbidden: User "{ROBOT}" cannot '
                          'impersonate resource "users" in API group "" at the cluster scope') in out
    # the administrator may impersonate (cluster-admin has every verb): alice may do nothing
    res = cluster.kubectl("--as", "alice", "get", "pods", "-n", NS, check=False)
    assert res.returncode != 0 and 'User "alice" cannot list resource "pods"' in res.stderr


def test_a_role_granting_more_than_its_creator_holds_is_refused(cluster: Cluster, robot: pathlib.Path) -> None:
    role = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: escalate, namespace: {NS}}}
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
"""
    code, out = as_robot(cluster, robot, "create", "-f", "-", input=role)
    assert code != 0
    assert (f'roles.rbac.authorization.k8s.io "escalate" is forbidden: user "{ROBOT}" (groups=["system:serviceaccounts" '
            f'"system:serviceaccounts:{NS}" "system:authenticated"]) is attempting to grant RBAC permissions not '
            'currently held:') in out
    # what it holds it may grant
    code, out = as_robot(cluster, robot, "create", "-f", "-", input=role.replace("secrets", "pods").replace(
        "escalate", "same"))
    assert code == 0, out
