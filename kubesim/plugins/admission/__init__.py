"""Admission: kube-apiserver's admission plugins, installed in kube's order.

kube-apiserver runs its admission chain in one fixed order (``AllOrderedPlugins`` in
``pkg/kubeapiserver/options/plugins.go``): mutating plugins before the registry validates the
object, validating ones after. ``install`` puts kubesim's chain on a generic store; the plugins
are served in every authorization mode.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from kubesim.plugins.admission.policies import ValidatingAdmissionPolicies
from kubesim.plugins.admission.priority import PriorityPlugin
from kubesim.plugins.authorization.escalation import Authorize, EscalationCheck
from kubesim.plugins.authorization.rbac import RuleResolver
from kubesim.registry.generic import GenericStore

__all__ = ["DISABLEABLE_PLUGINS", "AdmissionChain", "install"]

DISABLEABLE_PLUGINS: Final = ("Priority", "ValidatingAdmissionPolicy")


@dataclass(frozen=True, slots=True)
class AdmissionChain:
    """The plugins installed on one generic store."""

    priority: PriorityPlugin
    escalation: EscalationCheck
    policies: ValidatingAdmissionPolicies


def install(
    registry: GenericStore,
    resolver: RuleResolver,
    authorize: Authorize,
    *,
    disabled: Collection[str] = (),
) -> AdmissionChain:
    """Install the chain on ``registry`` in kube's order; ``resolver`` and ``authorize`` are the
    server's RBAC rules and authorizer chain, which the escalation check consults. Plugins
    named in ``disabled`` (of ``DISABLEABLE_PLUGINS``) are left out of it.

    1. ``NamespaceLifecycle``: a create in a missing namespace is a 404, in a terminating one a
       403 (the generic store's ``admit_namespace``, first of all, as upstream lists it first);
    2. ``Priority`` (``priority``): mutating, a pod's ``priorityClassName`` resolved into
       ``spec.priority`` and ``spec.preemptionPolicy``; validating, after the registry's
       validation, one ``globalDefault`` PriorityClass;
    3. RBAC escalation prevention (``kubesim.plugins.authorization.escalation``): not an
       admission plugin in kube but the RBAC registry's check on writes of roles and bindings,
       run here with the mutating plugins, before validation, since it needs the authorizer;
    4. ``ValidatingAdmissionPolicy`` (``policies``, with ``matching`` and ``kubesim.core.cel``):
       validating, after the registry's validation, for API requests only.

    Only ``Priority`` and ``ValidatingAdmissionPolicy`` can be left out, as kube-apiserver's
    ``--disable-admission-plugins`` leaves plugins out (kube's integration-test servers, which
    scheduler_perf runs against, disable Priority so that pods may carry ``spec.priority``
    without a class); the other two are not admission plugins one can switch off there.
    """
    unknown = sorted(set(disabled) - set(DISABLEABLE_PLUGINS))
    if unknown:
        raise ValueError(
            f"admission plugins {unknown} cannot be disabled: kubesim can leave out"
            f" {', '.join(DISABLEABLE_PLUGINS)}"
        )
    chain = AdmissionChain(
        priority=PriorityPlugin(registry),
        escalation=EscalationCheck(registry, resolver, authorize),
        policies=ValidatingAdmissionPolicies(registry),
    )
    if "Priority" not in disabled:
        registry.admission.append(chain.priority.admit)
        registry.validating_plugins.append(chain.priority.validate)
    registry.admission.append(chain.escalation)
    if "ValidatingAdmissionPolicy" not in disabled:
        registry.validating_admission.append(chain.policies)
    return chain
