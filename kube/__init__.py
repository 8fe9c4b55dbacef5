"""The Kubernetes basics every package of ours uses, each helper once: objects (``kube.objects``,
``kube.reader``, ``kube.manifests``, ``kube.documents``, ``kube.strict``, ``kube.schemagen``),
values (``kube.quantity``, ``kube.resourcehelper``, ``kube.labels``, ``kube.duration``,
``kube.ints``, ``kube.times``, ``kube.boundedjson``), the kubelet's facts (``kube.critical``,
``kube.qos``, ``kube.cgroups``, ``kube.conditions``, ``kube.kernelstats``), API and CLI
(``kube.apierrors``, ``kube.kubeconfig``, ``kube.net``, ``kube.cliutil``); ARCHITECTURE.md's
package table says what each holds.

The modules import nothing of ours (pyproject.toml's import contract), so any package may import
them. The package itself imports nothing, so ``import kube.quantity`` costs only that module:
the commands' start-up time depends on it.
"""
