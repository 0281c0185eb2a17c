-- OAuth2 credentials (docs/credentials.md): what must survive a restart, shared by every worker
-- and source that uses one. Tokens are stored sealed (AES-256-GCM, envelope), never in clear.
CREATE TYPE "credential_status" AS ENUM ('active', 'needs_reauthorization');

CREATE TABLE "credential" (
    "id" TEXT NOT NULL,
    "grant_type" TEXT NOT NULL,
    "token_url" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "client_secret_ref" TEXT,
    "client_auth" TEXT NOT NULL DEFAULT 'basic',
    "scope" TEXT,
    "audience" TEXT,
    "extra_params" JSONB NOT NULL DEFAULT '{}',
    "status" "credential_status" NOT NULL DEFAULT 'active',
    "status_reason" TEXT,
    "refresh_token" BYTEA,
    "access_token" BYTEA,
    "access_expires_at" TIMESTAMPTZ(3),
    "refresh_intent" UUID,
    "intent_started_at" TIMESTAMPTZ(3),
    "generation" INTEGER NOT NULL DEFAULT 0,
    "refreshes" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credential_pkey" PRIMARY KEY ("id")
);
