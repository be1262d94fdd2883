"""Who may do what, in one place: API keys for the API, roles for the dashboard.

`models`: the provenance tiers, channels and API keys (an app, label `access`, whose tables
keep their `beliefs_` names). `api_keys`: the API's bearer-key authentication and the checks
every operation makes (a permission, a user_id prefix, the unconfined admin). `roles`: the
dashboard's reviewer and operator roles and the view decorators. `logins`: the one write that
creates a login with its role. `management/commands`: the accounts and keys an operator makes
(`ensure_admin`, `create_login`, `create_api_key`, `ensure_demo_key`).

This package sits below every app: it imports none of them, and every app's API and views
stand on it. The two key commands are the exception, as entry points nothing imports: they
call `beliefs.services`, which records each key and channel in the provenance history.
"""
