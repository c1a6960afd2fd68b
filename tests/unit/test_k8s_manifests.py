"""The Kubernetes manifests in deploy/k8s/: schema-valid, and consistent with each other and the code.

Schema: each document against Kubernetes' OpenAPI schema (``kubernetes-validate``, strict: unknown
fields fail) and deserialized into the ``kubernetes`` client's model class; both skip when the
package is missing. Cross-references (PyYAML only, always run): Service selectors, Secret refs,
probe ports, DNS targets, the sandbox's NetworkPolicy and privileges (against docker-compose.yml),
grace periods, and every env variable against the servers' config dataclasses.

Checked on the files as written (base + components/rm) and, where ``kubectl`` is installed, on
``kubectl kustomize`` renders of the base, of overlays/rm-tls (TLS patches included) and of
overlays/environments (episodes, with session affinity at the door).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
NAMESPACE = "reward-suite"
KUBE_VERSION = "1.33.0"   # user namespaces on by default (the sandbox's hostUsers: false)
PORTS = {"reward": 50051, "sandbox": 50053, "rm": 50052, "http": 8080}
GRPC_SERVERS = ("reward", "sandbox", "rm")
DNS_TARGET = re.compile(r"^dns:///([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:(\d+)$")


def _load(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _raw_docs() -> list[dict]:
    base = yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text())
    docs = [doc for name in base["resources"] for doc in _load(K8S / "base" / name)]
    docs += _load(K8S / "components" / "rm" / "rm.yaml")
    for doc in docs:
        doc.setdefault("metadata", {}).setdefault("namespace", base["namespace"])
    return docs


def _render(target: str) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(K8S / target)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


SOURCES = ["files", "render:base", "render:overlays/rm-tls", "render:overlays/environments"]


@pytest.fixture(scope="module", params=SOURCES)
def docs(request) -> list[dict]:
    if request.param == "files":
        return _raw_docs()
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (for `kubectl kustomize`) is not installed")
    return _render(request.param.split(":", 1)[1])


def _by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _container(deployment: dict) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, deployment["metadata"]["name"]
    return containers[0]


def _env(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


def _labels_match(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _pods_selected(docs: list[dict], selector: dict) -> set[str]:
    return {name for name, d in _by_kind(docs, "Deployment").items()
            if _labels_match(selector, d["spec"]["template"]["metadata"]["labels"])}


# --- schema -----------------------------------------------------------------------------------

def test_every_document_is_schema_valid(docs):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_every_document_deserializes_into_its_model(docs):
    client = pytest.importorskip("kubernetes.client")
    api = client.ApiClient()

    class Response:  # what ApiClient.deserialize reads (clients before 34: a response object)
        def __init__(self, doc):
            self.data = json.dumps(doc)

    takes_text = "content_type" in inspect.signature(api.deserialize).parameters  # 34+: (text, type, content type)
    for doc in docs:
        version = doc["apiVersion"].split("/")[-1]
        model_name = f"{version.capitalize()}{doc['kind']}"
        model = (api.deserialize(json.dumps(doc), model_name, "application/json") if takes_text
                 else api.deserialize(Response(doc), model_name))
        assert model.metadata.name == doc["metadata"]["name"]
        assert api.sanitize_for_serialization(model)["kind"] == doc["kind"]


def test_kinds_present(docs):
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for name in ("reward", "sandbox", "http"):
        assert ("Deployment", name) in kinds and ("PodDisruptionBudget", name) in kinds
    assert {("HorizontalPodAutoscaler", "reward"), ("HorizontalPodAutoscaler", "sandbox"),
            ("NetworkPolicy", "sandbox"), ("Secret", "reward-suite-auth"), ("Secret", "reward-suite-tls"),
            ("Service", "reward"), ("Service", "reward-headless"), ("Service", "sandbox"),
            ("Service", "http")} <= kinds
    assert all(d["metadata"].get("namespace") == NAMESPACE for d in docs if d["kind"] != "Namespace")


# --- cross-references -------------------------------------------------------------------------

def test_services_select_deployment_pods_on_declared_ports(docs):
    deployments = _by_kind(docs, "Deployment")
    for name, svc in _by_kind(docs, "Service").items():
        selected = _pods_selected(docs, svc["spec"]["selector"])
        assert len(selected) == 1, f"Service {name} selects {selected}"
        ports = {p["name"]: p["containerPort"] for p in _container(deployments[selected.pop()])["ports"]}
        for port in svc["spec"]["ports"]:
            target = port["targetPort"]
            assert target in ports if isinstance(target, str) else target in ports.values(), (name, target)


def test_headless_services_for_client_side_balancing(docs):
    services = _by_kind(docs, "Service")
    for name in ("reward-headless", "sandbox", "rm"):
        if name in services:
            assert services[name]["spec"].get("clusterIP") == "None", name
    for name in ("reward", "http"):
        assert services[name]["spec"].get("clusterIP") != "None"
        assert services[name]["spec"].get("type", "ClusterIP") in ("ClusterIP", "LoadBalancer", "NodePort")


def test_dns_targets_name_headless_services_in_the_namespace(docs):
    services = _by_kind(docs, "Service")
    found = 0
    for dep in _by_kind(docs, "Deployment").values():
        for env in _env(_container(dep)).values():
            match = DNS_TARGET.match(env.get("value", ""))
            if env.get("value", "").startswith("dns:"):
                assert match, env
            if not match:
                continue
            found += 1
            name, namespace, port = match.group(1), match.group(2), int(match.group(3))
            assert namespace == NAMESPACE, env
            if name == "rm" and "rm" not in services:
                continue  # the optional reward model: the rm task answers per rollout without it
            assert services[name]["spec"]["clusterIP"] == "None", f"{env['name']}: round robin needs a headless Service"
            assert port in {p["port"] for p in services[name]["spec"]["ports"]}, env
    assert found >= 5


def test_secret_references_exist(docs):
    secrets = _by_kind(docs, "Secret")
    refs = 0
    for dep in _by_kind(docs, "Deployment").values():
        spec = dep["spec"]["template"]["spec"]
        for env in _env(_container(dep)).values():
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                refs += 1
                assert ref["name"] in secrets, ref
                assert ref["key"] in secrets[ref["name"]].get("stringData", secrets[ref["name"]].get("data", {}))
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                assert volume["secret"]["secretName"] in secrets
        secret_ref = _env(_container(dep))["REWARD_SUITE_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert secret_ref["name"] == "reward-suite-auth"
    assert refs >= 3


def _probe_port(probe: dict) -> int:
    if "grpc" in probe:
        return probe["grpc"]["port"]
    if "httpGet" in probe:
        return probe["httpGet"]["port"]
    if "tcpSocket" in probe:
        return probe["tcpSocket"]["port"]
    command = probe["exec"]["command"]  # [python, /opt/reward-suite/healthcheck.py, grpc|http, PORT]
    assert command[1] == "/opt/reward-suite/healthcheck.py" and command[2] in ("grpc", "http"), command
    return int(command[3])


def test_probes_use_the_servers_ports(docs):
    for name, dep in _by_kind(docs, "Deployment").items():
        container = _container(dep)
        env = _env(container)
        port_env = "SANDBOX_PORT" if name == "sandbox" else "REWARD_SERVICE_PORT"
        assert int(env[port_env]["value"]) == PORTS[name]
        named = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert named.get("grpc" if name in GRPC_SERVERS else "http") == PORTS[name]
        kinds = ("startupProbe", "readinessProbe", "livenessProbe") if name in GRPC_SERVERS else (
            "readinessProbe", "livenessProbe")
        for kind in kinds:
            probe = container[kind]
            assert _probe_port(probe) == PORTS[name], (name, kind)
            if name in GRPC_SERVERS:  # the gRPC health service: native, or exec under TLS
                assert "grpc" in probe or probe["exec"]["command"][2] == "grpc", (name, kind)
        if name == "http":
            assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
        if "REWARD_SUITE_TLS_CERT" in env and name in GRPC_SERVERS:
            assert "exec" in container["readinessProbe"], "Kubernetes' gRPC probe cannot speak TLS"


def test_network_policy_admits_only_router_and_http_to_the_sandbox(docs):
    policies = [p for p in _by_kind(docs, "NetworkPolicy").values()
                if _pods_selected(docs, p["spec"]["podSelector"]["matchLabels"]) & {"sandbox", "rm"}]
    guarded = {}
    for policy in policies:
        spec = policy["spec"]
        targets = _pods_selected(docs, spec["podSelector"]["matchLabels"])
        assert len(targets) == 1
        target = targets.pop()
        guarded[target] = policy
        assert set(spec["policyTypes"]) == {"Ingress", "Egress"} and not spec.get("egress")
        grpc_rules = 0
        for rule in spec["ingress"]:
            ports = {p["port"] for p in rule.get("ports", [])}
            assert ports, "a rule without ports opens every port"
            if PORTS[target] in ports:
                grpc_rules += 1
                peers = rule["from"]
                assert all(set(peer) == {"podSelector"} for peer in peers), "pods of this namespace only"
                admitted = set().union(*(_pods_selected(docs, p["podSelector"]["matchLabels"]) for p in peers))
                assert admitted == {"reward", "http"}, admitted
            else:
                assert ports <= {9102, 9103}, ports  # metrics only
        assert grpc_rules == 1
    assert "sandbox" in guarded
    assert ("rm" in guarded) == ("rm" in _by_kind(docs, "Deployment"))


def test_sandbox_privileges_are_composes(docs):
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["sandbox"]
    dep = _by_kind(docs, "Deployment")["sandbox"]
    pod, container = dep["spec"]["template"]["spec"], _container(dep)
    sc = container["securityContext"]
    assert compose["cap_drop"] == ["ALL"] and sc["capabilities"]["drop"] == ["ALL"]
    assert sorted(sc["capabilities"]["add"]) == sorted(compose["cap_add"])
    assert not any(cap.startswith("CAP_") for cap in sc["capabilities"]["add"])  # API server rule
    assert "no-new-privileges:true" in compose["security_opt"] and sc["allowPrivilegeEscalation"] is False
    assert "seccomp=unconfined" in compose["security_opt"] and sc["seccompProfile"]["type"] == "Unconfined"
    assert "systempaths=unconfined" in compose["security_opt"] and sc["procMount"] == "Unmasked"
    assert pod["hostUsers"] is False  # the API server accepts Unmasked only in a user namespace
    assert not sc.get("privileged") and compose.get("privileged") is None
    assert compose["read_only"] is True and sc["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {entry.split(":")[0] for entry in compose["tmpfs"]} <= mounts
    assert pod["automountServiceAccountToken"] is False
    for name, other in _by_kind(docs, "Deployment").items():
        if name != "sandbox":
            osc = _container(other)["securityContext"]
            assert osc["capabilities"] == {"drop": ["ALL"]} and osc["allowPrivilegeEscalation"] is False
            assert other["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_grace_period_exceeds_drain_and_connections_age(docs):
    for name, dep in _by_kind(docs, "Deployment").items():
        container, spec = _container(dep), dep["spec"]["template"]["spec"]
        env = _env(container)
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
        sleep = float(pre_stop[1]) if pre_stop[:1] == ["sleep"] else 0.0
        if name in GRPC_SERVERS:
            prefix = "SANDBOX_" if name == "sandbox" else "REWARD_SERVICE_"
            grace = float(env[prefix + "GRACE_S"]["value"])
            assert spec["terminationGracePeriodSeconds"] > grace + sleep, name
            assert float(env[prefix + "MAX_CONNECTION_AGE_S"]["value"]) > 0, name
        else:
            assert spec["terminationGracePeriodSeconds"] > sleep


def _quantity(value) -> float:
    value = str(value)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for unit, scale in units.items():
        if value.endswith(unit):
            return float(value[: -len(unit)]) * scale
    return float(value)


def test_resources_images_and_scaling(docs):
    deployments = _by_kind(docs, "Deployment")
    for name, dep in deployments.items():
        container = _container(dep)
        assert container["image"].split(":")[0] == f"reward-suite-{name}"  # deploy/docker/build_images.py's tags
        assert container["imagePullPolicy"] == "IfNotPresent"  # local images: no registry to pull from
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        for resource in ("cpu", "memory"):
            assert _quantity(requests[resource]) <= _quantity(limits[resource]), (name, resource)
        assert _labels_match(dep["spec"]["selector"]["matchLabels"], dep["spec"]["template"]["metadata"]["labels"])
    for pdb in _by_kind(docs, "PodDisruptionBudget").values():
        assert len(_pods_selected(docs, pdb["spec"]["selector"]["matchLabels"])) == 1
    for hpa in _by_kind(docs, "HorizontalPodAutoscaler").values():
        ref = hpa["spec"]["scaleTargetRef"]
        assert ref["kind"] == "Deployment" and ref["name"] in deployments
        assert hpa["spec"]["minReplicas"] >= 2 and hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
        assert any(m["type"] == "Resource" and m["resource"]["name"] == "cpu" for m in hpa["spec"]["metrics"])
        assert "resources" in _container(deployments[ref["name"]])


def _known_env() -> dict[str, set[str]]:
    """The variables each server reads: its config dataclass's flags under its prefix, plus extras."""
    from reward_core.channel_security import ClientSecurity
    from reward_core.config_flags import env_names
    from reward_core.server_security import ServerSecurityConfig
    from reward_service.http_door.server import HttpServerConfig
    from reward_service.rm.config import RewardModelServerConfig
    from reward_service.router.config import ServerConfig
    from reward_service.router.rewards_config import TaskEndpoints
    from sandbox.server import SandboxServerConfig

    def fields(cls, prefix: str) -> set[str]:  # the security settings: flags of their own builder
        return {prefix + f.name.upper() for f in dataclasses.fields(cls)}

    def flags(cls, prefix: str) -> set[str]:
        return env_names(cls, prefix, skip=("security", "scorer.rewards", "upstream.client_id", "upstream.security"))

    suite = fields(ServerSecurityConfig, "REWARD_SUITE_") | fields(ClientSecurity, "REWARD_SUITE_") | {
        "REWARD_SUITE_AUTH_TOKEN_FILE"}
    logs = {"LOG_LEVEL", "LOG_FORMAT"}
    return {
        "reward": suite | flags(ServerConfig, "REWARD_SERVICE_") | {f"REWARD_SERVICE_{x}" for x in logs | {"CONFIG"}}
        | fields(TaskEndpoints, "REWARD_SERVICE_"),
        "sandbox": suite | flags(SandboxServerConfig, "SANDBOX_") | {f"SANDBOX_{x}" for x in logs},
        "rm": suite | flags(RewardModelServerConfig, "REWARD_SERVICE_") | {f"REWARD_SERVICE_{x}" for x in logs}
        | {"HF_HUB_OFFLINE"},
        "http": suite | flags(HttpServerConfig, "REWARD_SERVICE_") | {f"REWARD_SERVICE_{x}" for x in logs},
    }


def test_env_variables_are_read_by_the_servers(docs):
    known = _known_env()
    for name, dep in _by_kind(docs, "Deployment").items():
        unknown = set(_env(_container(dep))) - known[name]
        assert not unknown, f"{name}: no server flag reads {sorted(unknown)}"


def test_environments_overlay_serves_episodes_with_session_affinity_at_the_door():
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (for `kubectl kustomize`) is not installed")
    docs = _render("overlays/environments")
    env = _env(_container(_by_kind(docs, "Deployment")["reward"]))
    assert env["REWARD_SERVICE_SERVE_ENVIRONMENTS"]["value"] == "true"
    target = DNS_TARGET.match(env["REWARD_SERVICE_ENV_SANDBOX_ENDPOINT"]["value"])
    assert target and target.group(1) == "sandbox" and int(target.group(3)) == PORTS["sandbox"]
    service = _by_kind(docs, "Service")["http"]["spec"]
    assert service["sessionAffinity"] == "ClientIP"
    ingress = _by_kind(docs, "Ingress")["http-sessions"]
    assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/upstream-hash-by"] == \
        "$http_x_session_id"   # ORS's X-Session-ID (reward_service/http_door/ors.py reads that header)
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "http", "port": {"number": PORTS["http"]}}
    base = _render("base")
    assert "sessionAffinity" not in _by_kind(base, "Service")["http"]["spec"]   # stateless scoring spreads
