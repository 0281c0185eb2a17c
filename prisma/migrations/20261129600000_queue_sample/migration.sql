-- Task-queue backlog samples (issue #8): the history `durable-fetch status` reads trends from.

-- CreateTable
CREATE TABLE "queue_sample" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "task_queue" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "backlog" BIGINT NOT NULL,
    "oldest_age_seconds" DOUBLE PRECISION NOT NULL,
    "add_rate" DOUBLE PRECISION NOT NULL,
    "dispatch_rate" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "queue_sample_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "queue_sample_task_queue_type_at_idx" ON "queue_sample"("task_queue", "type", "at");

-- CreateIndex
CREATE INDEX "queue_sample_at_idx" ON "queue_sample"("at");
