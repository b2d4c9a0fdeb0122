// Deep fuzzing (see deep-run.ts): frame-decoder, mux-decoder, ack-body.
import t from 'tap';
import { deepFuzz } from './deep-run.js';

deepFuzz(t, ['frame-decoder', 'mux-decoder', 'ack-body']);
