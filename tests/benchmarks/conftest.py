"""The benchmark scripts' tests share the session's migrated MLflow store (a migration costs seconds)."""

from tests.tracking.conftest import migrated_db as migrated_db
