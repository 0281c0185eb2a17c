/**
 * A process that asks for an access token with a crash point armed: started by
 * test/credential-refresh.test.ts to die (SIGKILL) between the token endpoint's answer and its
 * save. Reads DATABASE_URL, DF_SECRET_CREDENTIALS_KEY, DF_TEST_CREDENTIAL, DF_TEST_CLIENT_SECRET.
 */
import { createTokenProvider } from '../../activities/credentials/token-provider.ts';
import { createPrisma } from '../../db/client.ts';
import { parseMasterKey } from '../../runtime/credential-cipher.ts';

const prisma = createPrisma(process.env.DATABASE_URL ?? '', { max: 2 });
const provider = createTokenProvider({
  prisma,
  key: parseMasterKey(process.env.DF_SECRET_CREDENTIALS_KEY),
  secret: () => process.env.DF_TEST_CLIENT_SECRET,
  crashPoint: 'credential-after-token-response',
});
await provider.accessToken(process.env.DF_TEST_CREDENTIAL ?? '');
// Not reached: the crash point kills the process first.
await prisma.$disconnect();
