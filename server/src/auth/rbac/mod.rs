//! Role-based access control: the policy engine behind `--authorization-mode=RBAC`.
