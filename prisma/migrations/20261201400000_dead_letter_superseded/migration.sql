-- A dead letter closed because its business key succeeded another way (a Web UI Reset, a new
-- execution of the key's workflow): the run's success closes the key's open letters in the same
-- transaction, naming the execution that succeeded in close_reason.

-- AlterEnum
ALTER TYPE "dead_letter_status" ADD VALUE 'superseded';
