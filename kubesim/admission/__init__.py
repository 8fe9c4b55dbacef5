"""Admission policies: kube-apiserver's ValidatingAdmissionPolicy plugin for kubesim.

* ``kubesim.core.cel``: compiling and evaluating CEL (the ``common-expression-language``
  package, imported only once a policy is compiled);
* ``kubesim.registry.admissionregistration``: the policy kinds' strategies (defaults, the 422s
  of policy and binding writes);
* ``kubesim.admission.matching``: which requests a policy or binding covers;
* ``kubesim.admission.policies``: the dispatcher — params, matchConditions, validations,
  validation actions and kube's denial — installed on every simulator
  (``policies.install(sim)``), in every authorization mode, as in kube.
"""
