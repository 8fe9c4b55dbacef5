"""ServiceAccount tokens: the TokenRequest API and the authenticator that accepts its tokens.

What kube-apiserver does (``pkg/registry/core/serviceaccount/storage/token.go``,
``pkg/serviceaccount/jwt.go`` and ``claims.go``), in ``ServiceAccountTokens``. The ``default``
ServiceAccount of every namespace is ``kubesim.controllers.serviceaccount``'s.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from kube.times import format_time
from kubesim.core.attributes import UserInfo
from kubesim.core.errors import Cause, bad_request, conflict, invalid, not_found
from kubesim.core.objects import meta_of
from kubesim.core.store import clone
from kubesim.plugins.authentication.tokens import with_authenticated_group

if TYPE_CHECKING:
    from kubesim.registry.generic import GenericStore

__all__ = [
    "DEFAULT_EXPIRATION_SECONDS",
    "ISSUER",
    "MAX_EXPIRATION_SECONDS",
    "MIN_EXPIRATION_SECONDS",
    "ServiceAccountTokens",
    "TokenInvalid",
    "service_account_user",
]

# kubeadm's --service-account-issuer; --api-audiences defaults to it.
ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION_SECONDS: Final = 3600
MIN_EXPIRATION_SECONDS: Final = 10 * 60
MAX_EXPIRATION_SECONDS: Final = 1 << 32
LEEWAY_SECONDS: Final = 60  # go-jose's jwt.DefaultLeeway
ALGORITHM: Final = "ES256"
PREFIX: Final = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS: Final = "system:serviceaccounts"
POD_NAME: Final = "authentication.kubernetes.io/pod-name"
POD_UID: Final = "authentication.kubernetes.io/pod-uid"
NODE_NAME: Final = "authentication.kubernetes.io/node-name"
NODE_UID: Final = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID: Final = "authentication.kubernetes.io/credential-id"
TOKEN_REQUEST_GROUP: Final = "authentication.k8s.io"


class TokenInvalid(Exception):
    """A token of this issuer that does not authenticate; the message is the validator's."""


def service_account_user(
    namespace: str, name: str, uid: str, extra: Mapping[str, tuple[str, ...]] | None = None
) -> UserInfo:
    """``ServiceAccountInfo.UserInfo``, with ``system:authenticated``."""
    return with_authenticated_group(
        UserInfo(
            f"{PREFIX}{namespace}:{name}",
            uid,
            (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}"),
            dict(extra or {}),
        )
    )


@dataclass(frozen=True, slots=True)
class _Ref:
    name: str
    uid: str

    def claim(self) -> dict[str, str]:
        return {"name": self.name, "uid": self.uid} if self.uid else {"name": self.name}


def _field(path: str, value: Any, detail: str) -> Cause:
    """A ``field.Invalid`` cause, its message as Go formats the value."""
    shown = json.dumps(value) if isinstance(value, str) else value
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)


class ServiceAccountTokens:
    """The token issuer and authenticator (``--service-account-signing-key-file``,
    ``--service-account-issuer``, ``--api-audiences``) over the registry's objects.

    Time: the issuer and the validator read ``clock`` (seconds since the epoch, ``time.time``
    unless replaced), so a test proves expiry by moving that clock rather than by waiting —
    the one place kubesim's token time comes from.
    """

    def __init__(
        self,
        registry: GenericStore,
        *,
        issuer: str = ISSUER,
        audiences: Sequence[str] = (ISSUER,),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.registry = registry
        self.issuer = issuer
        self.audiences = tuple(audiences)
        self.clock = clock
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._public = self._key.public_key()

    # --- issuing ----------------------------------------------------------------------------

    def _find(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        rt = self.registry.scheme.for_kind("v1", kind)
        assert rt is not None
        return self.registry.find(rt, namespace if rt.namespaced else "", name)

    def issue(
        self,
        namespace: str,
        name: str,
        *,
        audiences: Sequence[str] = (),
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
        pod: Mapping[str, Any] | None = None,
        secret: Mapping[str, Any] | None = None,
        node: _Ref | None = None,
    ) -> tuple[str, float]:
        """A signed token for the ServiceAccount ``namespace/name`` and its expiry time.

        A JWT signed ES256 with the issuer's key, claims ``iss``, ``sub``
        (``system:serviceaccount:NS:NAME``), ``aud``, ``exp``, ``iat``, ``nbf``, ``jti`` and the
        private ``kubernetes.io`` claim: ``namespace``, ``serviceaccount`` {name, uid} and the
        bound ``pod``/``secret``/``node`` {name, uid}; a pod-bound token also names the pod's
        node (``pkg/serviceaccount/claims.go``, kube ≥ 1.30)."""
        sa = self._find("ServiceAccount", namespace, name)
        if sa is None:
            raise not_found("serviceaccounts", "", name)
        now = int(self.clock())
        expiry = now + expiration_seconds
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": _Ref(name, str(meta_of(sa).get("uid", ""))).claim(),
        }
        if pod is not None:
            private["pod"] = _Ref(meta_of(pod).get("name", ""), meta_of(pod).get("uid", "")).claim()
        if secret is not None:
            private["secret"] = _Ref(
                meta_of(secret).get("name", ""), meta_of(secret).get("uid", "")
            ).claim()
        if node is not None:
            private["node"] = node.claim()
        claims = {
            "iss": self.issuer,
            "sub": f"{PREFIX}{namespace}:{name}",
            "aud": list(audiences or self.audiences),
            "exp": expiry,
            "iat": now,
            "nbf": now,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
        }
        token = jwt.encode(claims, self._key, algorithm=ALGORITHM)
        return token, float(expiry)

    # --- authenticating ---------------------------------------------------------------------

    def lookup(self, token: str) -> UserInfo | None:
        """The token's user; None for tokens that are not this issuer's or do not validate
        (the bearer chain then answers 401)."""
        try:
            return self.review(token)
        except TokenInvalid:
            return None

    def review(self, token: str, audiences: Sequence[str] = ()) -> UserInfo | None:
        """Validate ``token`` for ``audiences`` (default: the server's); None when it is not
        a JWT of this issuer, ``TokenInvalid`` when it is but does not authenticate.

        A JWT of another issuer is not ours (the next authenticator is asked; none left: 401);
        ours must be correctly signed, be for one of the audiences the server accepts, be
        within ``nbf``/``exp`` with kube's one-minute leeway, its ServiceAccount must still
        exist with the same uid, and a bound pod or secret must still exist with the same uid
        and not have been deleting for more than the leeway (a node-bound token likewise for
        its node). The user is ``service_account_user``'s: ``system:serviceaccount:NS:NAME``,
        uid the ServiceAccount's, groups ``system:serviceaccounts`` and
        ``system:serviceaccounts:NS`` (plus ``system:authenticated``), extra
        ``authentication.kubernetes.io/pod-name``/``pod-uid``, ``node-name``/``node-uid`` and
        ``credential-id`` (``JTI=<jti>``) as ``ServiceAccountInfo.UserInfo`` sets them."""
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return None
        if not isinstance(unverified, dict) or unverified.get("iss") != self.issuer:
            return None
        try:
            claims = jwt.decode(
                token,
                self._public,
                algorithms=[ALGORITHM],
                options={
                    "verify_exp": False,  # checked below on self.clock
                    "verify_nbf": False,
                    "verify_iat": False,
                    "verify_aud": False,
                },
            )
        except jwt.PyJWTError:
            raise TokenInvalid("token could not be verified") from None
        wanted = list(audiences or self.audiences)
        token_aud = claims.get("aud")
        token_aud = [token_aud] if isinstance(token_aud, str) else token_aud
        if not isinstance(token_aud, list) or not set(map(str, token_aud)) & set(wanted):
            raise TokenInvalid(f"token audiences {token_aud!r} is invalid for the target audiences")
        return self._validate(claims)

    def _validate(self, claims: Mapping[str, Any]) -> UserInfo:
        now = self.clock()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or now > exp + LEEWAY_SECONDS:
            raise TokenInvalid("service account token has expired")
        if isinstance(nbf, int | float) and now < nbf - LEEWAY_SECONDS:
            raise TokenInvalid("service account token is not valid yet")
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise TokenInvalid("service account token claims could not be validated")
        namespace = str(private.get("namespace", ""))
        sa_ref = _ref_of(private.get("serviceaccount"))
        if not namespace or sa_ref is None:
            raise TokenInvalid("service account token claims could not be validated")
        sa = self._find("ServiceAccount", namespace, sa_ref.name)
        if sa is None or self._deleted(sa, now):
            raise TokenInvalid(f"service account {namespace}/{sa_ref.name} has been deleted")
        if str(meta_of(sa).get("uid", "")) != sa_ref.uid:
            raise TokenInvalid("service account UID does not match claim")
        extra: dict[str, tuple[str, ...]] = {}
        for kind, key in (("Secret", "secret"), ("Pod", "pod")):
            ref = _ref_of(private.get(key))
            if ref is None:
                continue
            obj = self._find(kind, namespace, ref.name)
            if obj is None or self._deleted(obj, now):
                raise TokenInvalid("service account token has been invalidated")
            if str(meta_of(obj).get("uid", "")) != ref.uid:
                raise TokenInvalid(f"{kind.lower()} UID does not match service account claim")
            if kind == "Pod":
                extra[POD_NAME] = (ref.name,)
                extra[POD_UID] = (ref.uid,)
        node_ref = _ref_of(private.get("node"))
        if node_ref is not None:
            if "pod" not in private:  # a node-bound token: the node must still be the same
                node = self._find("Node", "", node_ref.name)
                if node is None or self._deleted(node, now):
                    raise TokenInvalid("service account token has been invalidated")
                if str(meta_of(node).get("uid", "")) != node_ref.uid:
                    raise TokenInvalid("node UID does not match service account claim")
            extra[NODE_NAME] = (node_ref.name,)
            if node_ref.uid:
                extra[NODE_UID] = (node_ref.uid,)
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID] = (f"JTI={jti}",)
        return service_account_user(namespace, sa_ref.name, sa_ref.uid, extra)

    @staticmethod
    def _deleted(obj: Mapping[str, Any], now: float) -> bool:
        stamp = meta_of(obj).get("deletionTimestamp")
        if not stamp:
            return False
        from kube.times import parse_time

        try:
            return bool(parse_time(str(stamp)) < now - LEEWAY_SECONDS)
        except ValueError:
            return True

    # --- the TokenRequest API ----------------------------------------------------------------

    def token_request(self, namespace: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``TokenREST.Create`` on a decoded ``TokenRequest``; the answered TokenRequest (201).

        A ``metadata.name``/``namespace`` in the body must match the URL (422); the
        ServiceAccount must exist (404); ``spec.expirationSeconds`` defaults to 3600 and must
        lie in [600, 2^32] (422, kube's wording); ``spec.audiences`` defaults to the server's
        API audiences; ``boundObjectRef`` may name a Pod of this ServiceAccount (400 for a pod
        of another one), a Secret or a Node in the same way — the object must exist (404), its
        ``uid``, when given, must match (409), and any other kind is a 400. The answer is the
        request with ``status.token`` and ``status.expirationTimestamp``."""
        req: dict[str, Any] = clone(dict(body))
        meta = req.get("metadata") if isinstance(req.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        if meta.get("name") and meta["name"] != name:
            raise invalid(
                "TokenRequest",
                TOKEN_REQUEST_GROUP,
                name,
                [
                    _field(
                        "metadata.name",
                        meta["name"],
                        "must match the service account name if specified",
                    )
                ],
            )
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise invalid(
                "TokenRequest",
                TOKEN_REQUEST_GROUP,
                name,
                [
                    _field(
                        "metadata.namespace",
                        meta["namespace"],
                        "must match the service account namespace if specified",
                    )
                ],
            )
        sa = self._find("ServiceAccount", namespace, name)
        if sa is None:
            raise not_found("serviceaccounts", "", name)
        spec = req.get("spec")
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise bad_request('TokenRequest in version "v1" cannot be handled: spec: not an object')
        audiences = spec.get("audiences") or list(self.audiences)
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise invalid(
                "TokenRequest",
                TOKEN_REQUEST_GROUP,
                "",
                [_field("spec.audiences", audiences, "must be a list of strings")],
            )
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = DEFAULT_EXPIRATION_SECONDS
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise bad_request(
                'TokenRequest in version "v1" cannot be handled as a TokenRequest:'
                " spec.expirationSeconds: must be an integer"
            )
        causes = []
        if seconds < MIN_EXPIRATION_SECONDS:
            causes.append(
                _field(
                    "spec.expirationSeconds",
                    seconds,
                    "may not specify a duration less than 10 minutes",
                )
            )
        if seconds > MAX_EXPIRATION_SECONDS:
            causes.append(
                _field(
                    "spec.expirationSeconds",
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                )
            )
        if causes:
            raise invalid("TokenRequest", TOKEN_REQUEST_GROUP, "", causes)
        pod, secret, node = self._bound(namespace, name, spec.get("boundObjectRef"))
        now = self.clock()
        token, expiry = self.issue(
            namespace,
            name,
            audiences=audiences,
            expiration_seconds=seconds,
            pod=pod,
            secret=secret,
            node=node,
        )
        spec["audiences"] = audiences
        spec["expirationSeconds"] = seconds
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": format_time(now),
            },
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": format_time(expiry)},
        }

    def _bound(
        self, namespace: str, sa_name: str, ref: Any
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, _Ref | None]:
        if ref is None:
            return None, None, None
        if not isinstance(ref, dict):
            raise bad_request("spec.boundObjectRef: must be an object")
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        group, _, version = api_version.rpartition("/")
        pod = secret = None
        node: _Ref | None = None
        if group == "" and kind == "Pod":
            pod = self._find("Pod", namespace, name)
            if pod is None:
                raise not_found("pods", "", name)
            spec = pod.get("spec") or {}
            if (spec.get("serviceAccountName") or "default") != sa_name:
                raise bad_request(
                    f'cannot bind token for serviceaccount "{sa_name}" to pod running with'
                    " different serviceaccount name."
                )
            uid = str(meta_of(pod).get("uid", ""))
            node_name = spec.get("nodeName")
            if node_name:
                found = self._find("Node", "", str(node_name))
                node = _Ref(str(node_name), str(meta_of(found).get("uid", "")) if found else "")
        elif group == "" and kind == "Node":
            found = self._find("Node", "", name)
            if found is None:
                raise not_found("nodes", "", name)
            uid = str(meta_of(found).get("uid", ""))
            node = _Ref(name, uid)
        elif group == "" and kind == "Secret":
            secret = self._find("Secret", namespace, name)
            if secret is None:
                raise not_found("secrets", "", name)
            uid = str(meta_of(secret).get("uid", ""))
        else:
            gvk = f"{group}/{version}, Kind={kind}" if group else f"/{version}, Kind={kind}"
            raise bad_request(f"cannot bind token to object of type {gvk}")
        want = ref.get("uid")
        if want and want != uid:
            raise conflict(
                kind,
                group,
                name,
                f"the UID in the bound object reference ({want}) does not match the UID in"
                " record. The object might have been deleted and then recreated",
            )
        return pod, secret, node


def _ref_of(value: Any) -> _Ref | None:
    if not isinstance(value, dict) or not value.get("name"):
        return None
    return _Ref(str(value["name"]), str(value.get("uid", "")))
