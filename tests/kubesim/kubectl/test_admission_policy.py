"""Real kubectl against a kubesim with admission policies: a policy written with
``kubectl apply`` denies ``kubectl delete pod`` with kube-apiserver's message printed as is, a
policy with bad CEL is refused with the 422 kubectl prints, and Warn reaches kubectl's stderr."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kubesim
from tests.support.kubectl import STATE, Kubectl

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: keep-node-1
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [DELETE]
      resources: [pods]
  validations:
  - expression: oldObject.spec.nodeName != 'node-1'
    messageExpression: "'pods on node-1 stay: ' + oldObject.metadata.name"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: keep-node-1
spec:
  policyName: keep-node-1
  validationActions: [Deny]
"""


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    binary = shutil.which("kubectl") or "kubectl"
    async with kubesim.serve(state=STATE, time_scale=0.01) as sim:
        yield Kubectl(binary, sim, tmp_path)


async def test_applied_policy_denies_kubectl_delete(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "policy.yaml"
    manifest.write_text(POLICY)
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert "validatingadmissionpolicy.admissionregistration.k8s.io/keep-node-1 created" in out
    assert (
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/keep-node-1 created" in out
    )
    code, _, err = await kubectl("delete", "pod", "web-0", "--wait=false", check=False)
    assert code == 1
    assert err.strip() == (
        'Error from server (Forbidden): pods "web-0" is forbidden: ValidatingAdmissionPolicy'
        " 'keep-node-1' with binding 'keep-node-1' denied request: pods on node-1 stay: web-0"
    )
    assert kubectl.sim.get("Pod", "default", "web-0") is not None
    _, out, _ = await kubectl("delete", "pod", "db-0", "-n", "prod", "--wait=false")
    assert 'pod "db-0" deleted' in out
    # Applying the same file again changes nothing (defaults were filled in on create).
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert "keep-node-1 unchanged" in out


async def test_bad_cel_and_unknown_field_are_refused(kubectl: Kubectl, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(POLICY.split("---", maxsplit=1)[0].replace("!= 'node-1'", "!= 'node-1' &&"))
    code, _, err = await kubectl("apply", "-f", str(bad), check=False)
    assert code == 1
    assert (
        'The ValidatingAdmissionPolicy "keep-node-1" is invalid:'
        " spec.validations[0].expression: Invalid value: \"oldObject.spec.nodeName != 'node-1'"
        ' &&": compilation failed: ERROR: <input>:1:39: Syntax error: mismatched input'
        " '<EOF>' expecting"
    ) in err
    typo = tmp_path / "typo.yaml"
    typo.write_text(POLICY.split("---", maxsplit=1)[0].replace("reason:", "reasn:"))
    code, _, err = await kubectl("apply", "-f", str(typo), check=False)
    assert code == 1
    assert 'unknown field "spec.validations[0].reasn"' in err


async def test_warn_action_reaches_kubectl(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "policy.yaml"
    manifest.write_text(POLICY.replace("[Deny]", "[Warn]"))
    await kubectl("apply", "-f", str(manifest))
    _, out, err = await kubectl("delete", "pod", "web-0", "--wait=false")
    assert 'pod "web-0" deleted' in out
    assert (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'keep-node-1' with binding"
        " 'keep-node-1': pods on node-1 stay: web-0"
    ) in err


async def test_kubectl_get_shows_kube_columns(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "policy.yaml"
    manifest.write_text(
        POLICY
        + """
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: with-selector
spec:
  policyName: keep-node-1
  validationActions: [Audit]
  paramRef:
    selector: {matchLabels: {role: limits}}
    parameterNotFoundAction: Allow
"""
    )
    await kubectl("apply", "-f", str(manifest))
    _, out, _ = await kubectl("get", "validatingadmissionpolicies")
    assert [line.split()[:3] for line in out.strip().splitlines()] == [
        ["NAME", "VALIDATIONS", "PARAMKIND"],
        ["keep-node-1", "1", "<unset>"],
    ]
    _, out, _ = await kubectl("get", "validatingadmissionpolicybindings")
    assert [line.split()[:3] for line in out.strip().splitlines()] == [
        ["NAME", "POLICYNAME", "PARAMREF"],
        ["keep-node-1", "keep-node-1", "<unset>"],
        [
            "with-selector",
            "keep-node-1",
            "&LabelSelector{MatchLabels:map[string]string{role:",
        ],
    ]
