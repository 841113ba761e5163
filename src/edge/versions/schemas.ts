/** What every version probe answers: `{ version, millwright }`. */
import { Type } from '@sinclair/typebox';

export const VersionReply = Type.Object({ version: Type.String(), millwright: Type.String() });
