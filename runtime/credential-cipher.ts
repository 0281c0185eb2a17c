/**
 * Sealing the tokens a credential keeps in PostgreSQL (docs/credentials.md): envelope encryption
 * with Node's own AES-256-GCM. Each value gets a fresh data key; the data key is sealed by the
 * master key, which the process is given by reference (DF_SECRET_CREDENTIALS_KEY, 32 bytes in
 * base64) and which never reaches the database. The credential's id and the field name are bound
 * as associated data: a sealed value copied to another row or field does not open.
 *
 * A sealed value: version (1 byte) | master key id (8) | data key sealed (iv 12, tag 16, key 32)
 * | value sealed (iv 12, tag 16, ciphertext).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { UserFacingError } from './errors.ts';

const VERSION = 1;
const IV = 12;
const TAG = 16;
const KEY = 32;
const KEY_ID = 8;

/** A master key and its id (the first bytes of its SHA-256: which key sealed a value). */
export interface MasterKey {
  readonly key: Buffer;
  readonly id: Buffer;
}

/**
 * The master key from its base64 text (the value of DF_SECRET_CREDENTIALS_KEY).
 * @throws UserFacingError CREDENTIALS_KEY_INVALID when it is not 32 bytes of base64.
 */
export function parseMasterKey(text: string | undefined): MasterKey {
  const key = Buffer.from(text ?? '', 'base64');
  if (key.length !== KEY) {
    throw new UserFacingError(
      'the credentials key (DF_SECRET_CREDENTIALS_KEY) must be 32 random bytes in base64, e.g. `openssl rand -base64 32`',
      'CREDENTIALS_KEY_INVALID',
    );
  }
  return { key, id: createHash('sha256').update(key).digest().subarray(0, KEY_ID) };
}

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(IV);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function open(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV)).setAAD(aad);
  decipher.setAuthTag(sealed.subarray(IV, IV + TAG));
  return Buffer.concat([decipher.update(sealed.subarray(IV + TAG)), decipher.final()]);
}

const associated = (credentialId: string, field: string) => Buffer.from(`${credentialId}\0${field}`, 'utf8');

/** Seals `value` for `field` of credential `credentialId`. */
export function sealValue(master: MasterKey, credentialId: string, field: string, value: string): Buffer {
  const dataKey = randomBytes(KEY);
  const aad = associated(credentialId, field);
  return Buffer.concat([
    Buffer.from([VERSION]),
    master.id,
    seal(master.key, dataKey, aad),
    seal(dataKey, Buffer.from(value, 'utf8'), aad),
  ]);
}

/**
 * Opens a value {@link sealValue} sealed for the same credential and field.
 * @throws UserFacingError CREDENTIALS_KEY_MISMATCH when another master key sealed it, and
 *   CREDENTIAL_SEAL_BROKEN when it was altered or belongs to another row or field.
 */
export function openValue(
  master: MasterKey,
  credentialId: string,
  field: string,
  sealed: Uint8Array,
): string {
  const blob = Buffer.from(sealed);
  if (blob[0] !== VERSION || blob.length < 1 + KEY_ID + 2 * (IV + TAG) + KEY) {
    throw new UserFacingError(
      `credential ${credentialId}: its ${field} is not a sealed value`,
      'CREDENTIAL_SEAL_BROKEN',
    );
  }
  if (!blob.subarray(1, 1 + KEY_ID).equals(master.id)) {
    throw new UserFacingError(
      `credential ${credentialId}: its ${field} was sealed with another credentials key (DF_SECRET_CREDENTIALS_KEY)`,
      'CREDENTIALS_KEY_MISMATCH',
    );
  }
  const aad = associated(credentialId, field);
  const keyEnd = 1 + KEY_ID + IV + TAG + KEY;
  try {
    const dataKey = open(master.key, blob.subarray(1 + KEY_ID, keyEnd), aad);
    return open(dataKey, blob.subarray(keyEnd), aad).toString('utf8');
  } catch {
    throw new UserFacingError(
      `credential ${credentialId}: its ${field} does not open (altered, or sealed for another credential)`,
      'CREDENTIAL_SEAL_BROKEN',
    );
  }
}
