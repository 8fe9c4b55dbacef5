"""kubesim's certificate authority: the server's TLS certificate and client certificates.

A kubeadm cluster has one cluster CA (``/etc/kubernetes/pki/ca.crt``) that signs the
apiserver's serving certificate and every client certificate it accepts
(``--client-ca-file``); kubeconfigs carry it as ``certificate-authority-data``. kubesim does
the same with a CA it generates when a ``Simulator(tls=True)`` is built, kept in memory only
(``CertificateAuthority``), and authenticates client certificates as kube-apiserver's x509
authenticator does (``ClientCertificates``).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubesim.core.attributes import UserInfo
from kubesim.plugins.authentication import unauthorized
from kubesim.plugins.authentication.tokens import with_authenticated_group

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "CREDENTIAL_ID",
    "CertificateAuthority",
    "ClientCertificates",
    "Credentials",
    "server_names",
    "user_of_certificate",
]

CREDENTIAL_ID: Final = "authentication.kubernetes.io/credential-id"
CA_DAYS: Final = 3650
LEAF_DAYS: Final = 365
# The names kube-apiserver's serving certificate carries for in-cluster clients.
KUBERNETES_SERVICE_NAMES: Final = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True, slots=True)
class Credentials:
    """A certificate and its private key, PEM-encoded (the key unencrypted, PKCS#8)."""

    certificate: bytes
    key: bytes


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def server_names(host: str) -> list[str]:
    """What the serving certificate must name for clients that connect to ``host``."""
    names = ["localhost", "127.0.0.1", "::1", *KUBERNETES_SERVICE_NAMES]
    if host and host not in ("0.0.0.0", "::") and host not in names:
        names.append(host)
    return names


class CertificateAuthority:
    """A freshly generated CA that issues serving and client certificates.

    Keys are ECDSA P-256 (one key generation is ~1 ms, where RSA 2048 takes ~100 ms),
    certificates are X.509 v3 as kubeadm writes them and as Python's ``ssl`` accepts under
    ``VERIFY_X509_STRICT`` (key identifiers, critical basic constraints and key usage):

    * the CA: ``CN=kubesim-ca``, a CA with ``keyCertSign``;
    * the serving certificate: ``serverAuth``, subject alternative names for ``localhost``,
      ``127.0.0.1``, ``::1``, the names kube's ``kubernetes`` Service answers to, and the
      address the server listens on (``server_names``);
    * client certificates: ``clientAuth``, ``CN`` = the user name and one ``O`` per group —
      the convention of kube-apiserver's x509 authenticator (``CommonNameUserConversion``).
    """

    def __init__(
        self,
        *,
        common_name: str = "kubesim-ca",
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(common_name)
        now = self._clock()
        public = self._key.public_key()
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.certificate_pem = self.certificate.public_bytes(serialization.Encoding.PEM)

    def _issue(
        self,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        *,
        days: int,
        alternative_names: Iterable[x509.GeneralName] = (),
    ) -> Credentials:
        key = ec.generate_private_key(ec.SECP256R1())
        now = self._clock()
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        names = list(alternative_names)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return Credentials(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def issue_server(self, names: Iterable[str]) -> Credentials:
        """A serving certificate (``kube-apiserver``) for these DNS names and IP addresses."""
        general: list[x509.GeneralName] = []
        for name in dict.fromkeys(names):
            try:
                general.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                general.append(x509.DNSName(name))
        return self._issue(
            _name("kube-apiserver"),
            ExtendedKeyUsageOID.SERVER_AUTH,
            days=LEAF_DAYS,
            alternative_names=general,
        )

    def issue_client(
        self, user: str, groups: Sequence[str] = (), *, days: int = LEAF_DAYS
    ) -> Credentials:
        """A client certificate for ``user`` (``CN``) in ``groups`` (one ``O`` each)."""
        if not user:
            raise ValueError("a client certificate needs a user name (its CN)")
        return self._issue(_name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH, days=max(1, days))

    def server_context(self, serving: Credentials, key_dir: str) -> ssl.SSLContext:
        """The TLS context of the server: ``serving`` as its certificate, client certificates
        requested and verified against this CA when presented (``RequestClientCert`` plus the
        x509 authenticator's verification; see ``ClientCertificates``).

        ``ssl`` loads a certificate chain only from files: they are written under ``key_dir``
        (which the caller keeps private and removes)."""
        import os

        cert_path = os.path.join(key_dir, "apiserver.crt")
        key_path = os.path.join(key_dir, "apiserver.key")
        for path, data in ((cert_path, serving.certificate), (key_path, serving.key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2  # kube-apiserver's default floor
        context.load_cert_chain(cert_path, key_path)
        context.load_verify_locations(cadata=self.certificate_pem.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
        return context


class ClientCertificates:
    """kube-apiserver's x509 authenticator over the connection's verified peer certificate.

    A TLS peer certificate, already verified against the CA during the handshake, becomes the
    user named in its subject, with the ``authentication.kubernetes.io/credential-id`` extra
    kube-apiserver ≥ 1.31 adds (``X509SHA256=`` and the certificate's SHA-256 fingerprint).

    Python's ``ssl`` verifies a presented client certificate during the handshake, so one
    from another CA fails the handshake; kube-apiserver requests the certificate without
    verifying it there and answers 401 from its authenticator. Either way the request is
    refused before it is served; only the way it is refused differs.
    """

    def authenticate_peer(self, request: web.Request) -> UserInfo | None:
        """The certificate's user; None when the connection carries no client certificate."""
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_object is None:
            return None
        der = ssl_object.getpeercert(binary_form=True)
        if not der:
            return None
        return user_of_certificate(der)


def user_of_certificate(der: bytes) -> UserInfo | None:
    """``CommonNameUserConversion``: CN the user, each O a group; None without a CN (not a
    certificate user: the token authenticators are asked), 401 when the certificate is not
    for client authentication."""
    cert = x509.load_der_x509_certificate(der)
    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usage = None
    if usage is not None and ExtendedKeyUsageOID.CLIENT_AUTH not in usage:
        raise unauthorized()
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    user = str(names[0].value) if names else ""
    if not user:
        return None
    groups = tuple(
        str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )
    fingerprint = cert.fingerprint(hashes.SHA256()).hex()
    return with_authenticated_group(
        UserInfo(user, groups=groups, extra={CREDENTIAL_ID: (f"X509SHA256={fingerprint}",)})
    )
