-- CreateTable
CREATE TABLE "shipment" (
    "id" TEXT NOT NULL,
    "source_id" TEXT NOT NULL,
    "shipped_on" DATE NOT NULL,
    "status" TEXT NOT NULL,
    "weight_grams" INTEGER NOT NULL,
    "fetch_run_id" UUID NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "shipment_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "shipment_source_id_shipped_on_idx" ON "shipment"("source_id", "shipped_on");
