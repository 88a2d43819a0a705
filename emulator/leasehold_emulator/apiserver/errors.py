"""API errors as the ``Status`` objects real clients parse."""

from __future__ import annotations

from typing import Any

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
           413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
           500: "InternalError"}


class ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": self.message,
                               "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


def not_found(kind: str, name: str, group: str = "") -> ApiError:
    what = f"{kind}.{group}" if group else kind
    return ApiError(404, f'{what} "{name}" not found',
                    details={"name": name, "group": group, "kind": kind})


def already_exists(kind: str, name: str, group: str = "") -> ApiError:
    what = f"{kind}.{group}" if group else kind
    return ApiError(409, f'{what} "{name}" already exists', "AlreadyExists",
                    details={"name": name, "group": group, "kind": kind})


def conflict(kind: str, name: str, group: str = "") -> ApiError:
    what = f"{kind}.{group}" if group else kind
    return ApiError(409, f'Operation cannot be fulfilled on {what} "{name}": the object has'
                         " been modified; please apply your changes to the latest version"
                         " and try again", "Conflict",
                    details={"name": name, "group": group, "kind": kind})


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = ""
            ) -> ApiError:
    """422 with one cause per field: (field, message, reason). The message lists
    them as a real server does: one alone, several in brackets, each once."""
    what = f"{kind}.{group}" if group else kind
    each = list(dict.fromkeys(f"{f}: {m}" for f, m, _ in causes))
    listed = each[0] if len(each) == 1 else f"[{', '.join(each)}]"
    return ApiError(422, f'{what} "{name}" is invalid: {listed}',
                    details={"name": name, "group": group, "kind": kind,
                             "causes": [{"reason": r, "message": m, "field": f}
                                        for f, m, r in causes]})
