/** Wire shapes of the task routes. */
import { Type, type Static } from '@sinclair/typebox';

export const TaskParams = Type.Object({ taskId: Type.String({ minLength: 1, maxLength: 100 }) });
export type TaskParams = Static<typeof TaskParams>;
export const SubtaskParams = Type.Object({ subtaskId: Type.String({ minLength: 1, maxLength: 100 }) });
export type SubtaskParams = Static<typeof SubtaskParams>;

/** `from` and `to`: epoch milliseconds or an ISO 8601 time. */
export const HistoryQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ maxLength: 40 })),
    to: Type.Optional(Type.String({ maxLength: 40 })),
    offset: Type.Optional(Type.String()),
    limit: Type.Optional(Type.String()),
    sort: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
    filter: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  },
  { additionalProperties: true },
);

/** `POST /async-task/{taskId}/resume`: the body is optional. */
export const ResumeBody = Type.Object(
  { deadlineSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })) },
  { additionalProperties: false },
);
export type ResumeBody = Static<typeof ResumeBody>;
