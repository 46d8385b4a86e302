"""What the authentication tests of both tiers share: the secret, tokens and settings."""

from __future__ import annotations

import base64

from bundlewise.config import Config
from bundlewise.config.views import AuthSettings
from bundlewise.live.broker.auth import Authority, make_token

SECRET = b"0123456789abcdef0123456789abcdef-bundlewise"
SECRET_URL = "data:;base64," + base64.b64encode(SECRET).decode()
ADMIN = make_token(SECRET, "admin")
ALICE = make_token(SECRET, "alice")
AUTH = {"authenticationEnabled": "true", "tokenSecretKey": SECRET_URL, "superUserRoles": "admin"}
AUTHZ = {**AUTH, "authorizationEnabled": "true"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def authority(**values: object) -> Authority:
    return Authority(Config().with_values(values).view(AuthSettings))
